import type { JSONSchema } from '../api/types'

/** How a parameter is edited. */
export type FieldKind = 'integer' | 'number' | 'boolean' | 'select' | 'text' | 'textarea' | 'list' | 'object' | 'json'

export interface Option {
  value: string
  label: string
}

/** Field is one control of a parameter form, derived from a JSON Schema property. */
export interface Field {
  /** The property's name, such as "num_candidates". */
  name: string
  /** Its dotted path from the form's root, such as "temperatures.generate". */
  path: string
  label: string
  description?: string
  kind: FieldKind
  required: boolean
  /** For numbers: the bounds and whether they are exclusive. */
  min?: number
  max?: number
  exclusiveMin?: boolean
  exclusiveMax?: boolean
  step?: number
  /** For lists: what separates the items as typed, a comma (short items such as tags) or a new line. */
  separator?: ',' | '\n'
  /** For strings and lists. */
  minLength?: number
  maxLength?: number
  pattern?: string
  /** For selects: the values, in order. */
  options?: Option[]
  /** The type of an enum's values, so that a selected string is sent as it was declared. */
  enumType?: 'string' | 'number' | 'integer' | 'boolean'
  /** For objects: their fields. */
  children?: Field[]
  /** The path of the toggle without which the field means nothing (a threshold of a filter): off, the field is disabled. */
  enabledBy?: string
}

/** The raw value of a control: text as typed, or a toggle's state. */
export type RawValue = string | boolean

/** Values are a form's raw values by field path. */
export type Values = Record<string, RawValue>

/** Errors are one-line messages by field path. */
export type Errors = Record<string, string>

/** The parameter that takes one of the temperature presets. */
export const presetField = 'temperature_preset'

/** Parameters that only mean something with a toggle on, by name: the toggle's name, a sibling. */
const enabledByToggle: Record<string, string> = { novelty_threshold: 'novelty_filter' }

/** Strings longer than this are edited in a text area. */
const textareaLength = 2000

/** A string parameter that is edited in a text area whatever its length. */
const longText = new Set(['context', 'constraints', 'notes', 'description', 'body', 'query', 'prompt'])

/**
 * fieldsOf derives the controls of a form from a pipeline's params_schema.
 * Properties keep the schema's order; $ref is followed within the schema;
 * presetNames give the options of a temperature_preset parameter that has
 * no enum of its own.
 */
export function fieldsOf(schema: JSONSchema, presetNames: string[] = []): Field[] {
  const root = schema
  const walk = (s: JSONSchema, prefix: string, depth: number): Field[] => {
    s = resolve(root, s)
    const required = new Set(s.required ?? [])
    const out: Field[] = []
    for (const [name, raw] of Object.entries(s.properties ?? {})) {
      const p = resolve(root, raw)
      if (p.readOnly || p.const !== undefined) continue
      const path = prefix ? `${prefix}.${name}` : name
      const f: Field = {
        name,
        path,
        label: p.title || humanize(name),
        description: p.description,
        kind: 'text',
        required: required.has(name),
      }
      const type = primaryType(p)
      if (p.enum && p.enum.length > 0) {
        f.kind = 'select'
        f.options = p.enum.map((v) => ({ value: String(v), label: valueLabel(v) }))
        f.enumType = (type === 'number' || type === 'integer' || type === 'boolean' ? type : 'string') as Field['enumType']
      } else if (name === presetField && type === 'string' && presetNames.length > 0) {
        f.kind = 'select'
        f.options = presetNames.map((v) => ({ value: v, label: valueLabel(v) }))
        f.enumType = 'string'
      } else if (type === 'integer' || type === 'number') {
        f.kind = type
        if (p.minimum !== undefined) f.min = p.minimum
        if (p.exclusiveMinimum !== undefined) {
          f.min = p.exclusiveMinimum
          f.exclusiveMin = true
        }
        if (p.maximum !== undefined) f.max = p.maximum
        if (p.exclusiveMaximum !== undefined) {
          f.max = p.exclusiveMaximum
          f.exclusiveMax = true
        }
        f.step = p.multipleOf ?? (type === 'integer' ? 1 : undefined)
      } else if (type === 'boolean') {
        f.kind = 'boolean'
      } else if (type === 'string') {
        f.kind = p.format === 'textarea' || (p.maxLength ?? 0) > textareaLength || longText.has(name) ? 'textarea' : 'text'
        f.minLength = p.minLength
        f.maxLength = p.maxLength
        f.pattern = p.pattern
      } else if (type === 'array' && p.items && ['string', 'number', 'integer'].includes(primaryType(resolve(root, p.items)) ?? '')) {
        f.kind = 'list'
        // Tags and the like fit on a line; ideas and sentences get one line each.
        f.separator = /tags?$|keywords?$|names?$|ids?$/.test(name) ? ',' : '\n'
        f.minLength = p.minItems
        f.maxLength = p.maxItems
      } else if (type === 'object' && p.properties && depth < 4) {
        f.kind = 'object'
        f.children = walk(p, path, depth + 1)
      } else {
        f.kind = 'json'
      }
      out.push(f)
    }
    for (const f of out) {
      const toggle = out.find((x) => x.name === enabledByToggle[f.name] && x.kind === 'boolean')
      if (toggle) f.enabledBy = toggle.path
    }
    return out
  }
  return walk(schema, '', 0)
}

/** resolve follows a local $ref ("#/$defs/X") within root. */
function resolve(root: JSONSchema, s: JSONSchema): JSONSchema {
  let cur = s
  for (let i = 0; cur.$ref && i < 16; i++) {
    const m = /^#\/(\$defs|definitions)\/(.+)$/.exec(cur.$ref)
    const target = m ? (m[1] === '$defs' ? root.$defs : root.definitions)?.[decodeURIComponent(m[2])] : undefined
    const rest: JSONSchema = { ...cur }
    delete rest.$ref
    if (!target) return rest
    cur = { ...target, ...rest }
  }
  return cur
}

function primaryType(s: JSONSchema): string | undefined {
  if (Array.isArray(s.type)) return s.type.find((t) => t !== 'null')
  if (s.type) return s.type
  if (s.enum && s.enum.length > 0) return typeof s.enum[0] === 'number' ? 'number' : typeof s.enum[0]
  if (s.properties) return 'object'
  return undefined
}

/** valueLabel names an enum's value for people: "full_reasoning" is "Full reasoning"; numbers stay as they are. */
export function valueLabel(v: unknown): string {
  return typeof v === 'string' ? humanize(v) : String(v)
}

/** humanize turns "num_top_candidates" into "Num top candidates". */
export function humanize(name: string): string {
  const s = name.replace(/[_-]+/g, ' ').trim()
  return s.charAt(0).toUpperCase() + s.slice(1)
}

/** flatten lists the leaf fields of a form, depth first. */
export function flatten(fields: Field[]): Field[] {
  return fields.flatMap((f) => (f.kind === 'object' && f.children ? flatten(f.children) : [f]))
}

/**
 * initialValues are the raw values of a fresh form: the pipeline's
 * defaults, else the schema's, else empty.
 */
export function initialValues(fields: Field[], schema: JSONSchema, defaults: Record<string, unknown> = {}): Values {
  const v: Values = {}
  const schemaDefaults = collectDefaults(schema)
  for (const f of flatten(fields)) {
    let d = get(defaults, f.path)
    if (d === undefined) d = schemaDefaults[f.path]
    v[f.path] = toRaw(f, d)
  }
  return v
}

/**
 * collectDefaults maps each property's path to its default: its own, else
 * the member of an enclosing object's default (a schema may give
 * "temperatures" one default object rather than a default per role).
 */
function collectDefaults(root: JSONSchema): Record<string, unknown> {
  const out: Record<string, unknown> = {}
  const walk = (s: JSONSchema, prefix: string, inherited: unknown, depth: number) => {
    s = resolve(root, s)
    for (const [name, p0] of Object.entries(s.properties ?? {})) {
      const p = resolve(root, p0)
      const path = prefix ? `${prefix}.${name}` : name
      const fromParent = inherited !== null && typeof inherited === 'object' ? (inherited as Record<string, unknown>)[name] : undefined
      const d = p.default !== undefined ? p.default : fromParent
      if (d !== undefined) out[path] = d
      if (p.properties && depth < 8) walk(p, path, d, depth + 1)
    }
  }
  walk(root, '', undefined, 0)
  return out
}

/** Preset roles that stand for a temperature parameter of another name. */
const presetAliases: Record<string, string[]> = {
  generate: ['idea_generation', 'generation'],
  improve: ['improvement', 'idea_generation', 'generation'],
  evaluate: ['evaluation'],
  advocate: ['advocacy'],
  skeptic: ['skepticism'],
}

/** presetValue is a preset's temperature for a parameter, by its name or an alias. */
export function presetValue(preset: Record<string, number | undefined>, name: string): number | undefined {
  for (const k of [name, ...(presetAliases[name] ?? [])]) {
    if (typeof preset[k] === 'number') return preset[k]
  }
  return undefined
}

/**
 * presetOf returns the name of the preset whose temperatures the group's
 * fields hold, or '' when they match none (custom values).
 */
export function presetOf(group: Field, values: Values, presets: Record<string, Record<string, number | undefined>>): string {
  const kids = group.children ?? []
  for (const [name, p] of Object.entries(presets)) {
    const all = kids.every((k) => {
      const want = presetValue(p, k.name)
      return want !== undefined && Number(values[k.path]) === want && values[k.path] !== ''
    })
    if (kids.length > 0 && all) return name
  }
  return ''
}

/** isTemperatureGroup tells whether a field is a group of temperatures that presets can set. */
export function isTemperatureGroup(f: Field): boolean {
  return f.kind === 'object' && /temperature/.test(f.name) && (f.children ?? []).length > 0 && (f.children ?? []).every((c) => c.kind === 'number')
}

function get(obj: Record<string, unknown>, path: string): unknown {
  let cur: unknown = obj
  for (const k of path.split('.')) {
    if (cur === null || typeof cur !== 'object') return undefined
    cur = (cur as Record<string, unknown>)[k]
  }
  return cur
}

function toRaw(f: Field, d: unknown): RawValue {
  switch (f.kind) {
    case 'boolean':
      return d === true
    case 'list':
      return Array.isArray(d) ? d.join(f.separator === '\n' ? '\n' : ', ') : ''
    case 'json':
      return d === undefined ? '' : JSON.stringify(d, null, 2)
    default:
      return d === undefined || d === null ? '' : String(d)
  }
}

/** validateField returns the one-line problem with a field's raw value, or undefined. */
export function validateField(f: Field, raw: RawValue | undefined): string | undefined {
  if (f.kind === 'boolean') return undefined
  const text = typeof raw === 'string' ? raw : ''
  const empty = text.trim() === ''
  if (empty) return f.required ? `${f.label} is required` : undefined
  switch (f.kind) {
    case 'integer':
    case 'number': {
      const n = Number(text)
      if (!Number.isFinite(n)) return `${f.label} must be a number`
      if (f.kind === 'integer' && !Number.isInteger(n)) return `${f.label} must be a whole number`
      if (f.min !== undefined && (f.exclusiveMin ? n <= f.min : n < f.min)) {
        return `${f.label} must be ${f.exclusiveMin ? 'greater than' : 'at least'} ${f.min}`
      }
      if (f.max !== undefined && (f.exclusiveMax ? n >= f.max : n > f.max)) {
        return `${f.label} must be ${f.exclusiveMax ? 'less than' : 'at most'} ${f.max}`
      }
      return undefined
    }
    case 'select':
      if (!f.options?.some((o) => o.value === text)) {
        return `${f.label} must be one of ${f.options?.map((o) => o.value).join(', ')}`
      }
      return undefined
    case 'text':
    case 'textarea': {
      const len = [...text].length
      if (f.minLength !== undefined && len < f.minLength) return `${f.label} must be at least ${f.minLength} characters`
      if (f.maxLength !== undefined && len > f.maxLength) return `${f.label} must be at most ${f.maxLength} characters (it is ${len})`
      if (f.pattern !== undefined) {
        let re: RegExp | undefined
        try {
          re = new RegExp(f.pattern, 'u')
        } catch {
          re = undefined
        }
        if (re && !re.test(text)) return `${f.label} has the wrong form`
      }
      return undefined
    }
    case 'list': {
      const n = splitList(text, f.separator).length
      if (f.minLength !== undefined && n < f.minLength) return `${f.label} needs at least ${f.minLength} items`
      if (f.maxLength !== undefined && n > f.maxLength) return `${f.label} takes at most ${f.maxLength} items`
      return undefined
    }
    case 'json':
      try {
        JSON.parse(text)
        return undefined
      } catch {
        return `${f.label} must be valid JSON`
      }
    default:
      return undefined
  }
}

/** isEnabled tells whether a field is in use: it is, unless the toggle it depends on is off. */
export function isEnabled(f: Field, values: Values): boolean {
  return f.enabledBy === undefined || values[f.enabledBy] === true
}

/** validate checks every field of a form in use (see isEnabled). */
export function validate(fields: Field[], values: Values): Errors {
  const errors: Errors = {}
  for (const f of flatten(fields)) {
    if (!isEnabled(f, values)) continue
    const e = validateField(f, values[f.path])
    if (e) errors[f.path] = e
  }
  return errors
}

/** splitList reads a list typed with a separator: a comma by default, or a new line. */
export function splitList(text: string, separator: ',' | '\n' = ','): string[] {
  return text
    .split(separator === '\n' ? /\r?\n/ : ',')
    .map((s) => s.trim())
    .filter((s) => s !== '')
}

/**
 * toParams turns valid raw values into the pipeline's params: numbers as
 * numbers, toggles as booleans, nested objects rebuilt. Empty optional
 * fields, and fields not in use (see isEnabled), are left out, so the
 * server's defaults apply.
 */
export function toParams(fields: Field[], values: Values): Record<string, unknown> {
  const out: Record<string, unknown> = {}
  for (const f of fields) {
    if (!isEnabled(f, values)) continue
    if (f.kind === 'object') {
      const child = toParams(f.children ?? [], values)
      if (Object.keys(child).length > 0) out[f.name] = child
      continue
    }
    const raw = values[f.path]
    if (f.kind === 'boolean') {
      out[f.name] = raw === true
      continue
    }
    const text = typeof raw === 'string' ? raw : ''
    if (text.trim() === '') continue
    switch (f.kind) {
      case 'integer':
      case 'number':
        out[f.name] = Number(text)
        break
      case 'select':
        out[f.name] = f.enumType === 'number' || f.enumType === 'integer' ? Number(text) : f.enumType === 'boolean' ? text === 'true' : text
        break
      case 'list':
        out[f.name] = splitList(text, f.separator)
        break
      case 'json':
        out[f.name] = JSON.parse(text)
        break
      default:
        out[f.name] = text
    }
  }
  return out
}

/**
 * fieldOfError maps the field an API error names ("params.num_candidates")
 * to a form field's path, or undefined when no field of the form matches.
 */
export function fieldOfError(fields: Field[], apiField: string | undefined): string | undefined {
  if (!apiField) return undefined
  const path = apiField.replace(/^params\./, '').replace(/\[(\d+)\]/g, '.$1')
  const leaves = flatten(fields)
  for (let p = path; p !== ''; p = p.includes('.') ? p.slice(0, p.lastIndexOf('.')) : '') {
    if (leaves.some((f) => f.path === p)) return p
  }
  return undefined
}

/**
 * fieldInMessage finds the form field an error message is about when the
 * API names none: the parameter mentioned first, as a whole word ("spark
 * parameters: num_top_candidates (4) must not exceed num_candidates (3)").
 */
export function fieldInMessage(fields: Field[], message: string): string | undefined {
  let best: { at: number; len: number; path: string } | undefined
  for (const f of flatten(fields)) {
    for (const key of new Set([f.path, f.name])) {
      const re = new RegExp(`(^|[^A-Za-z0-9_.])${key.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}(?![A-Za-z0-9_])`)
      const m = re.exec(message)
      if (!m) continue
      const at = m.index + m[1].length
      if (!best || at < best.at || (at === best.at && key.length > best.len)) best = { at, len: key.length, path: f.path }
    }
  }
  return best?.path
}

/**
 * fieldInGroup finds the form field a validation error is about when the
 * field the API names is not a control of the form: a group
 * ("params.profile") or none at all. It looks for a parameter of the group
 * (of the whole form without one) in the message ("params: profile:
 * academic_program must not be empty"). A field outside the parameters
 * ("pipeline", "tags") is no control's.
 */
export function fieldInGroup(fields: Field[], apiField: string | undefined, message: string): string | undefined {
  if (!apiField || apiField === 'params') return fieldInMessage(fields, message)
  if (!apiField.startsWith('params.')) return undefined
  const group = apiField.replace(/^params\./, '').replace(/\[(\d+)\]/g, '.$1')
  const within = flatten(fields).filter((f) => f.path.startsWith(`${group}.`))
  return within.length > 0 ? fieldInMessage(within, message) : undefined
}
