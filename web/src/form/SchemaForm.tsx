import { useState } from 'react'
import type { RoleTemperatures } from '../api/types'
import { FieldError, errorId } from '../components/FieldError'
import { isEnabled, isTemperatureGroup, presetField, presetOf, presetValue, valueLabel, type Errors, type Field, type RawValue, type Values } from './schema'

export interface SchemaFormProps {
  /** Prefix of the controls' ids, unique on the page. */
  idPrefix: string
  fields: Field[]
  values: Values
  errors: Errors
  onChange(path: string, value: RawValue): void
  onBlur?(path: string): void
  /** The temperature presets, to describe the chosen one. */
  presets?: Record<string, RoleTemperatures>
  disabled?: boolean
}

/** controlId is the id of a field's control. */
export function controlId(prefix: string, path: string): string {
  return `${prefix}-${path.replace(/[^A-Za-z0-9_-]/g, '-')}`
}

/**
 * SchemaForm renders the controls of a parameter form derived from a JSON
 * Schema (see fieldsOf): numbers with their bounds, toggles, selects, text
 * and text areas, nested groups. Each control has a label and shows its
 * error on one line under it.
 */
export function SchemaForm(props: SchemaFormProps) {
  const basic = props.fields.filter(isBasic)
  const advanced = props.fields.filter((f) => !isBasic(f))
  const [open, setOpen] = useState(false)
  // An error in a folded field unfolds them, so that it is seen.
  const failing = advanced.some((f) => Object.keys(props.errors).some((p) => props.errors[p] && (p === f.path || p.startsWith(f.path + '.'))))
  return (
    <div className="schema-form">
      {basic.map((f) => (
        <FieldControl key={f.path} field={f} {...props} />
      ))}
      {advanced.length > 0 && (
        <details className="advanced" open={open || failing} onToggle={(e) => setOpen(e.currentTarget.open)}>
          <summary>Advanced</summary>
          {advanced.map((f) => (
            <FieldControl key={f.path} field={f} {...props} />
          ))}
        </details>
      )}
    </div>
  )
}

/** basicFields are shown unfolded besides the required ones: what a run is about. */
const basicFields = new Set(['context', 'mode'])

/** isBasic tells whether a field is shown at first sight; the others are folded under "Advanced". */
export function isBasic(f: Field): boolean {
  return f.required || basicFields.has(f.name)
}

function FieldControl(props: SchemaFormProps & { field: Field }) {
  const { field: f, idPrefix, values, errors, onChange, onBlur, disabled } = props
  const id = controlId(idPrefix, f.path)
  const error = errors[f.path]
  const hintId = `${id}-hint`
  const raw = values[f.path]
  const text = typeof raw === 'string' ? raw : ''
  const hint = hintText(f, props.presets, text)
  const describedBy = [hint ? hintId : '', error ? errorId(id) : ''].filter(Boolean).join(' ') || undefined
  const common = {
    id,
    name: f.path,
    // A field whose toggle is off (a filter's threshold) cannot be edited.
    disabled: disabled || !isEnabled(f, values),
    'aria-invalid': error ? true : undefined,
    'aria-describedby': describedBy,
    'aria-required': f.required || undefined,
    onBlur: () => onBlur?.(f.path),
  }
  const hintLine = hint ? (
    <p className="hint" id={hintId}>
      {hint}
    </p>
  ) : null

  if (f.kind === 'object') {
    const presets = props.presets && Object.keys(props.presets).length > 0 && isTemperatureGroup(f) && !props.fields.some((x) => x.name === presetField) ? props.presets : undefined
    const presetId = `${id}-preset`
    return (
      <fieldset className="field-group">
        <legend>{f.label}</legend>
        {f.description && <p className="hint">{f.description}</p>}
        {presets && (
          <div className="field">
            <label htmlFor={presetId}>Temperature preset</label>
            <select
              id={presetId}
              value={presetOf(f, values, presets)}
              disabled={disabled}
              onChange={(e) => {
                const p = presets[e.target.value]
                if (!p) return
                for (const c of f.children ?? []) {
                  const t = presetValue(p, c.name)
                  if (t !== undefined) onChange(c.path, String(t))
                }
              }}
            >
              <option value="">(custom)</option>
              {Object.keys(presets).map((n) => (
                <option key={n} value={n}>
                  {valueLabel(n)}
                </option>
              ))}
            </select>
          </div>
        )}
        {(f.children ?? []).map((c) => (
          <FieldControl key={c.path} {...props} field={c} />
        ))}
      </fieldset>
    )
  }

  if (f.kind === 'boolean') {
    return (
      <div className="field field-toggle">
        <input type="checkbox" role="switch" checked={raw === true} onChange={(e) => onChange(f.path, e.target.checked)} {...common} />
        <label htmlFor={id}>{f.label}</label>
        {hintLine}
        <FieldError id={id} message={error} />
      </div>
    )
  }

  let control
  switch (f.kind) {
    case 'integer':
    case 'number':
      control = (
        <input
          type="number"
          inputMode={f.kind === 'integer' ? 'numeric' : 'decimal'}
          min={f.min}
          max={f.max}
          step={f.step ?? 'any'}
          value={text}
          onChange={(e) => onChange(f.path, e.target.value)}
          {...common}
        />
      )
      break
    case 'select':
      control = (
        <select value={text} onChange={(e) => onChange(f.path, e.target.value)} {...common}>
          {(!f.required || text === '') && <option value="">{f.required ? 'Choose…' : '(default)'}</option>}
          {(f.options ?? []).map((o) => (
            <option key={o.value} value={o.value}>
              {o.label}
            </option>
          ))}
        </select>
      )
      break
    case 'textarea':
    case 'json':
    case 'list':
      if (f.kind === 'list' && f.separator !== '\n') {
        control = <input type="text" value={text} onChange={(e) => onChange(f.path, e.target.value)} autoComplete="off" {...common} />
        break
      }
      control = (
        <textarea
          rows={f.kind === 'json' ? 6 : 3}
          className={f.kind === 'json' ? 'mono' : undefined}
          value={text}
          onChange={(e) => onChange(f.path, e.target.value)}
          {...common}
        />
      )
      break
    default:
      control = <input type="text" value={text} onChange={(e) => onChange(f.path, e.target.value)} autoComplete="off" {...common} />
  }
  return (
    <div className="field">
      <label htmlFor={id}>
        {f.label}
        {f.required && (
          <span className="required" aria-hidden="true">
            {' '}
            *
          </span>
        )}
      </label>
      {control}
      {hintLine}
      <FieldError id={id} message={error} />
    </div>
  )
}

/** hintText is the line under a control: its description, bounds, and what a preset sets. */
function hintText(f: Field, presets: Record<string, RoleTemperatures> | undefined, value: string): string | undefined {
  if (f.kind === 'object') return undefined
  const parts: string[] = []
  // A label made from the description (a pipeline file's input) is not repeated.
  if (f.description && f.description !== f.label) parts.push(f.description)
  if (f.min !== undefined && f.max !== undefined && !f.exclusiveMin && !f.exclusiveMax) parts.push(`${f.min}–${f.max}`)
  else if (f.min !== undefined && f.max !== undefined) {
    parts.push(`${f.exclusiveMin ? 'more than' : 'at least'} ${f.min} and ${f.exclusiveMax ? 'less than' : 'at most'} ${f.max}`)
  } else if (f.min !== undefined) parts.push(`${f.exclusiveMin ? 'more than' : 'at least'} ${f.min}`)
  else if (f.max !== undefined) parts.push(`${f.exclusiveMax ? 'less than' : 'at most'} ${f.max}`)
  if (f.kind === 'list') parts.push(f.separator === '\n' ? 'one per line' : 'comma-separated')
  if (f.kind === 'json') parts.push('JSON')
  if (f.name === presetField && presets && value && presets[value]) {
    parts.push(
      Object.entries(presets[value])
        .map(([role, t]) => `${role.replace(/_/g, ' ')} ${t}`)
        .join(' · '),
    )
  }
  return parts.length > 0 ? parts.join(' · ') : undefined
}
