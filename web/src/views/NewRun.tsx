import { useCallback, useEffect, useMemo, useRef, useState, type FormEvent } from 'react'
import { Navigate, useNavigate, useSearchParams } from 'react-router'
import { ApiError } from '../api/client'
import { useApi } from '../api/context'
import { fieldMessage, problemOfError, type Problem } from '../api/problems'
import type { BrokenPipeline, PipelineInfo, Run, TemperaturePresets } from '../api/types'
import { FieldError, errorId } from '../components/FieldError'
import { ProblemView } from '../components/ProblemView'
import { StartWarning, useStatus } from '../api/status'
import { commandKey, isSubmitKey } from '../components/keys'
import { SchemaForm, controlId } from '../form/SchemaForm'
import {
  fieldInGroup,
  fieldOfError,
  fieldsOf,
  flatten,
  initialValues,
  presetField,
  splitList,
  toParams,
  validate,
  validateField,
  type Errors,
  type RawValue,
  type Values,
} from '../form/schema'

const formId = 'run-form'
const pipelineId = 'pipeline'
const tagsId = 'run-tags'
const submitId = 'run-submit'

interface FormState {
  values: Values
  errors: Errors
}

/**
 * NewRun starts a run of any pipeline the API lists, with a form generated
 * from the pipeline's params_schema. Ctrl+Enter (⌘+Enter) submits.
 */
export function NewRun() {
  const api = useApi()
  const navigate = useNavigate()
  const [search, setSearch] = useSearchParams()
  const [pipelines, setPipelines] = useState<PipelineInfo[]>()
  const [broken, setBroken] = useState<BrokenPipeline[]>([])
  const [presets, setPresets] = useState<TemperaturePresets>()
  const [loadError, setLoadError] = useState<Problem>()
  const [forms, setForms] = useState<Record<string, FormState>>({})
  const [tags, setTags] = useState('')
  const [tagsError, setTagsError] = useState<string>()
  const [pipelineError, setPipelineError] = useState<string>()
  const [submitError, setSubmitError] = useState<Problem>()
  // The run whose parameters fill the form (Edit and run again).
  const from = search.get('from') ?? ''
  const [source, setSource] = useState<Run>()
  const [submitting, setSubmitting] = useState(false)
  const formRef = useRef<HTMLFormElement>(null)
  const key = useMemo(() => commandKey(), [])
  const serverDown = useStatus().server === 'down'

  useEffect(() => {
    const ac = new AbortController()
    // An eval has a page of its own (Evals), with its topics one per line.
    api.pipelineList(ac.signal).then(
      (list) => {
        setPipelines(list.pipelines.filter((p) => p.name !== 'eval'))
        setBroken(list.broken)
      },
      (err) => {
        if (!ac.signal.aborted) setLoadError(problemOfError(err))
      },
    )
    // Presets only enrich the form: without them it still works.
    api.temperaturePresets(ac.signal).then(setPresets, () => setPresets({ presets: {} }))
    return () => ac.abort()
  }, [api])

  useEffect(() => {
    if (!from) return
    const ac = new AbortController()
    api.run(from, ac.signal).then(
      (r) => {
        setSource(r)
        setForms({})
        if (r.tags?.length) setTags(r.tags.join(', '))
      },
      (err) => {
        if (ac.signal.aborted) return
        // The form starts from the defaults, and says why.
        setSubmitError(problemOfError(err))
        setSource({ run_id: from } as Run)
      },
    )
    return () => ac.abort()
  }, [api, from])

  const selected = useMemo(() => {
    if (!pipelines || pipelines.length === 0) return undefined
    const want = search.get('pipeline')
    return pipelines.find((p) => p.name === want) ?? pipelines.find((p) => p.name === 'spark') ?? pipelines[0]
  }, [pipelines, search])

  const presetNames = useMemo(() => Object.keys(presets?.presets ?? {}), [presets])
  const fields = useMemo(() => (selected ? fieldsOf(selected.params_schema, presetNames) : []), [selected, presetNames])

  const form: FormState | undefined = useMemo(() => {
    if (!selected || presets === undefined) return undefined
    const existing = forms[selected.name]
    if (existing) return existing
    if (from && source?.run_id !== from) return undefined
    // Edit and run again: the run's own values over the defaults.
    const given = source && source.pipeline === selected.name ? { ...selected.defaults, ...source.params } : selected.defaults
    const values = initialValues(fields, selected.params_schema, given)
    if (presets.default && values[presetField] === '' && flatten(fields).some((f) => f.path === presetField && f.options?.some((o) => o.value === presets.default))) {
      values[presetField] = presets.default
    }
    return { values, errors: {} }
  }, [selected, presets, forms, fields, from, source])

  const update = useCallback(
    (fn: (s: FormState) => FormState) => {
      if (!selected || !form) return
      setForms((all) => ({ ...all, [selected.name]: fn(all[selected.name] ?? form) }))
    },
    [selected, form],
  )

  const onChange = (path: string, value: RawValue) => {
    setSubmitError(undefined)
    update((s) => {
      const values = { ...s.values, [path]: value }
      const errors = { ...s.errors }
      // A field its toggle turns off is no longer checked.
      for (const f of flatten(fields)) {
        if (f.enabledBy === path && value !== true) delete errors[f.path]
      }
      // An error already shown is re-checked as the person types.
      if (errors[path] !== undefined) {
        const f = flatten(fields).find((x) => x.path === path)
        const e = f ? validateField(f, value) : undefined
        if (e) errors[path] = e
        else delete errors[path]
      }
      return { values, errors }
    })
  }

  const onBlur = (path: string) => {
    update((s) => {
      const f = flatten(fields).find((x) => x.path === path)
      const e = f ? validateField(f, s.values[path]) : undefined
      const errors = { ...s.errors }
      if (e) errors[path] = e
      else delete errors[path]
      return { ...s, errors }
    })
  }

  const focus = (id: string) => {
    requestAnimationFrame(() => document.getElementById(id)?.focus())
  }

  const submit = async (e?: FormEvent) => {
    e?.preventDefault()
    if (!selected || !form || submitting) return
    setSubmitError(undefined)
    setTagsError(undefined)
    setPipelineError(undefined)
    const errors = validate(fields, form.values)
    const first = flatten(fields).find((f) => errors[f.path])
    if (first) {
      update((s) => ({ ...s, errors }))
      focus(controlId(formId, first.path))
      return
    }
    update((s) => ({ ...s, errors: {} }))
    setSubmitting(true)
    try {
      const r = await api.startRun(selected.name, toParams(fields, form.values), splitList(tags))
      navigate(`/runs/${encodeURIComponent(r.run_id)}`)
    } catch (err) {
      setSubmitting(false)
      const field = err instanceof ApiError ? err.field : undefined
      const raw = err instanceof ApiError ? err.message : String(err)
      // Beside its field, the message leaves out what locates it.
      const message = fieldMessage(raw, field)
      // A check across fields may name no field, and a check of a group
      // names the group: the message names the parameter.
      const validation = err instanceof ApiError && (err.status === 400 || err.status === 422)
      const path = fieldOfError(fields, field) ?? (validation ? fieldInGroup(fields, field, raw) : undefined)
      if (path) {
        update((s) => ({ ...s, errors: { ...s.errors, [path]: message } }))
        focus(controlId(formId, path))
      } else if (field === 'tags' || field?.startsWith('tags[')) {
        setTagsError(message)
        focus(tagsId)
      } else if (field === 'pipeline') {
        setPipelineError(message)
        focus(pipelineId)
      } else {
        setSubmitError(problemOfError(err))
        // The error is under the button, at the foot of what may be a long
        // form: bring it into view, and read it out with the button.
        focus(submitId)
      }
    }
  }

  // Ctrl+Enter or ⌘+Enter anywhere on the page submits.
  const submitRef = useRef(submit)
  submitRef.current = submit
  useEffect(() => {
    const onKey = (e: KeyboardEvent) => {
      if (isSubmitKey(e)) {
        e.preventDefault()
        void submitRef.current()
      }
    }
    window.addEventListener('keydown', onKey)
    return () => window.removeEventListener('keydown', onKey)
  }, [])

  if (search.get('pipeline') === 'eval') return <Navigate to={`/evals${from ? `?from=${encodeURIComponent(from)}` : ''}`} replace />
  if (loadError) {
    return (
      <section aria-labelledby="new-run-heading">
        <h1 id="new-run-heading">New run</h1>
        <ProblemView problem={loadError} />
      </section>
    )
  }
  if (!pipelines || !form || !selected) {
    return (
      <section aria-labelledby="new-run-heading" aria-busy="true">
        <h1 id="new-run-heading">New run</h1>
        <p>Loading…</p>
      </section>
    )
  }

  return (
    <section aria-labelledby="new-run-heading">
      <h1 id="new-run-heading">New run</h1>
      {broken.length > 0 && (
        <div className="warning" role="status" aria-label="Pipeline files not served">
          <p>
            {broken.length === 1 ? 'A pipeline file was' : `${broken.length} pipeline files were`} not served; fix{' '}
            {broken.length === 1 ? 'it' : 'them'} and restart the server:
          </p>
          <ul>
            {broken.map((b) => (
              <li key={b.file}>
                <code>{b.file}</code>: {b.error}
              </li>
            ))}
          </ul>
        </div>
      )}
      <form id={formId} ref={formRef} onSubmit={submit} noValidate aria-describedby="submit-hint">
        <div className="field">
          <label htmlFor={pipelineId}>Pipeline</label>
          <select
            id={pipelineId}
            value={selected.name}
            onChange={(e) => {
              setPipelineError(undefined)
              setSubmitError(undefined)
              setSearch({ pipeline: e.target.value }, { replace: true })
            }}
            aria-describedby={[selected.description ? 'pipeline-hint' : '', pipelineError ? errorId(pipelineId) : ''].filter(Boolean).join(' ') || undefined}
            aria-invalid={pipelineError ? true : undefined}
          >
            {pipelines.map((p) => (
              <option key={p.name} value={p.name}>
                {p.title || p.name}
              </option>
            ))}
          </select>
          {selected.description && (
            <p className="hint" id="pipeline-hint">
              {selected.description}
            </p>
          )}
          <FieldError id={pipelineId} message={pipelineError} />
        </div>
        {flatten(fields).some((f) => f.required) && (
          <p className="hint" id="required-hint">
            Fields marked <span className="required">*</span> are required.
          </p>
        )}
        <SchemaForm
          idPrefix={formId}
          fields={fields}
          values={form.values}
          errors={form.errors}
          onChange={onChange}
          onBlur={onBlur}
          presets={presets?.presets}
          disabled={submitting}
        />
        <div className="field">
          <label htmlFor={tagsId}>Run tags</label>
          <input
            id={tagsId}
            type="text"
            value={tags}
            onChange={(e) => {
              setTags(e.target.value)
              setTagsError(undefined)
            }}
            placeholder="optional, comma-separated"
            autoComplete="off"
            aria-invalid={tagsError ? true : undefined}
            aria-describedby={tagsError ? errorId(tagsId) : undefined}
            disabled={submitting}
          />
          <FieldError id={tagsId} message={tagsError} />
        </div>
        <StartWarning />
        <div className="submit-row">
          <button id={submitId} type="submit" className="primary" disabled={submitting || serverDown} aria-describedby={submitError ? errorId(submitId) : undefined}>
            {submitting ? 'Starting…' : 'Start run'}
          </button>
          <span className="hint" id="submit-hint">
            or press <kbd>{key}</kbd>+<kbd>Enter</kbd>
          </span>
        </div>
        {submitError && <ProblemView problem={submitError} id={errorId(submitId)} />}
      </form>
    </section>
  )
}
