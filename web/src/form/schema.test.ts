import { describe, expect, it } from 'vitest'
import { registrySparkSchema, sparkSchema } from '../test/fixtures'
import { fieldInGroup, fieldInMessage, fieldOfError, fieldsOf, flatten, initialValues, presetOf, presetValue, toParams, validate, validateField, type Field } from './schema'

const byPath = (fs: Field[], p: string) => flatten(fs).find((f) => f.path === p)!

describe('fieldsOf', () => {
  const fields = fieldsOf(sparkSchema, ['balanced', 'creative'])

  it('derives a control per property, in order, following $ref', () => {
    expect(fields.map((f) => [f.name, f.kind])).toEqual([
      ['topic', 'text'],
      ['context', 'textarea'],
      ['num_candidates', 'integer'],
      ['num_top_candidates', 'integer'],
      ['temperature_preset', 'select'],
      ['temperatures', 'object'],
      ['enhanced_reasoning', 'boolean'],
      ['novelty_threshold', 'number'],
      ['output_format', 'select'],
      ['tags', 'list'],
    ])
    expect(byPath(fields, 'temperatures.generate')).toMatchObject({ kind: 'number', min: 0, max: 2, label: 'Generate' })
  })

  it('reads labels, bounds, requiredness and options', () => {
    expect(byPath(fields, 'topic')).toMatchObject({ label: 'Topic', required: true, minLength: 1, maxLength: 2000 })
    expect(byPath(fields, 'num_candidates')).toMatchObject({ label: 'Ideas generated', min: 1, max: 20, step: 1, required: false })
    expect(byPath(fields, 'num_top_candidates').label).toBe('Num top candidates')
    expect(byPath(fields, 'novelty_threshold')).toMatchObject({ min: 0, exclusiveMin: true, max: 1 })
    expect(byPath(fields, 'temperature_preset').options?.map((o) => o.value)).toEqual(['balanced', 'creative'])
    expect(byPath(fields, 'output_format').options?.map((o) => o.value)).toEqual(['brief', 'detailed', 'json'])
  })

  it('keeps a free text preset field when no presets are known', () => {
    expect(byPath(fieldsOf(sparkSchema), 'temperature_preset').kind).toBe('text')
  })
})

describe('validation', () => {
  const fields = fieldsOf(sparkSchema, ['balanced'])
  const f = (p: string) => byPath(fields, p)

  it('checks integer bounds and wholeness', () => {
    expect(validateField(f('num_candidates'), '0')).toBe('Ideas generated must be at least 1')
    expect(validateField(f('num_candidates'), '21')).toBe('Ideas generated must be at most 20')
    expect(validateField(f('num_candidates'), '2.5')).toBe('Ideas generated must be a whole number')
    expect(validateField(f('num_candidates'), 'many')).toBe('Ideas generated must be a number')
    expect(validateField(f('num_candidates'), '20')).toBeUndefined()
    expect(validateField(f('num_candidates'), '')).toBeUndefined()
  })

  it('checks exclusive bounds', () => {
    expect(validateField(f('novelty_threshold'), '0')).toBe('Novelty threshold must be greater than 0')
    expect(validateField(f('novelty_threshold'), '0.01')).toBeUndefined()
    expect(validateField(f('novelty_threshold'), '1.01')).toBe('Novelty threshold must be at most 1')
  })

  it('checks enums, required text, lengths and list sizes', () => {
    expect(validateField(f('output_format'), 'verbose')).toBe('Output format must be one of brief, detailed, json')
    expect(validateField(f('output_format'), 'json')).toBeUndefined()
    expect(validateField(f('topic'), '   ')).toBe('Topic is required')
    expect(validateField(f('topic'), 'x'.repeat(2001))).toBe('Topic must be at most 2000 characters (it is 2001)')
    expect(validateField(f('topic'), '🌱'.repeat(2000))).toBeUndefined()
    expect(validateField(f('tags'), 'a, b, c, d')).toBe('Tags takes at most 3 items')
    expect(validateField(f('enhanced_reasoning'), true)).toBeUndefined()
  })

  it('validates a whole form by path', () => {
    const v = initialValues(fields, sparkSchema)
    v['temperatures.generate'] = '3'
    expect(validate(fields, v)).toEqual({
      topic: 'Topic is required',
      'temperatures.generate': 'Generate must be at most 2',
    })
  })
})

describe('values and params', () => {
  const fields = fieldsOf(sparkSchema, ['balanced'])

  it('starts from the pipeline defaults, then the schema defaults', () => {
    const v = initialValues(fields, sparkSchema, { num_candidates: 8, enhanced_reasoning: true, temperatures: { generate: 0.9 } })
    expect(v.num_candidates).toBe('8')
    expect(v.num_top_candidates).toBe('3')
    expect(v.novelty_threshold).toBe('0.8')
    expect(v.enhanced_reasoning).toBe(true)
    expect(v['temperatures.generate']).toBe('0.9')
    expect(v['temperatures.evaluate']).toBe('')
    expect(v.topic).toBe('')
  })

  it('sends typed values, nested objects, lists, and leaves out empty optional fields', () => {
    const v = initialValues(fields, sparkSchema)
    Object.assign(v, { topic: 'urban farming', num_candidates: '6', 'temperatures.generate': '1.1', tags: 'a, , b ', temperature_preset: 'balanced' })
    expect(toParams(fields, v)).toEqual({
      topic: 'urban farming',
      num_candidates: 6,
      num_top_candidates: 3,
      temperature_preset: 'balanced',
      temperatures: { generate: 1.1 },
      enhanced_reasoning: false,
      novelty_threshold: 0.8,
      tags: ['a', 'b'],
    })
  })

  it('sends enum values with their declared type', () => {
    const fs = fieldsOf({ type: 'object', properties: { rounds: { type: 'integer', enum: [1, 2, 3] } } })
    expect(toParams(fs, { rounds: '2' })).toEqual({ rounds: 2 })
  })

  it("maps the API's error field to a control", () => {
    expect(fieldOfError(fields, 'params.num_top_candidates')).toBe('num_top_candidates')
    expect(fieldOfError(fields, 'params.temperatures.generate')).toBe('temperatures.generate')
    expect(fieldOfError(fields, 'params.tags[2]')).toBe('tags')
    expect(fieldOfError(fields, 'params.unknown')).toBeUndefined()
    expect(fieldOfError(fields, 'pipeline')).toBeUndefined()
    expect(fieldOfError(fields, undefined)).toBeUndefined()
  })
})

describe('the registry\'s schema', () => {
  const fields = fieldsOf(registrySparkSchema)
  const group = fields.find((f) => f.name === 'temperatures')!

  it("takes a nested field's default from its object's default", () => {
    const v = initialValues(fields, registrySparkSchema)
    expect([v['temperatures.generate'], v['temperatures.evaluate'], v['temperatures.improve']]).toEqual(['0.9', '0.3', '0.9'])
    expect(v.novelty_filter).toBe(true)
    expect(toParams(fields, v).temperatures).toEqual({ generate: 0.9, evaluate: 0.3, advocate: 0.5, skeptic: 0.5, improve: 0.9 })
  })

  it('matches temperatures to presets by role, under the seed\'s or the pipeline\'s names', () => {
    const presets = {
      balanced: { idea_generation: 0.7, evaluation: 0.3, advocacy: 0.5, skepticism: 0.5 },
      creative: { generate: 0.9, evaluate: 0.3, advocate: 0.5, skeptic: 0.5, improve: 0.9 },
    }
    expect(presetValue(presets.balanced, 'improve')).toBe(0.7)
    expect(presetValue(presets.balanced, 'skeptic')).toBe(0.5)
    expect(presetValue(presets.creative, 'improve')).toBe(0.9)
    expect(presetValue(presets.balanced, 'unknown')).toBeUndefined()
    const v = initialValues(fields, registrySparkSchema)
    expect(presetOf(group, v, presets)).toBe('creative')
    v['temperatures.skeptic'] = '0.6'
    expect(presetOf(group, v, presets)).toBe('')
  })

  it('takes long list items one per line, tags comma-separated', () => {
    const fs = fieldsOf({ type: 'object', properties: { seed_ideas: { type: 'array', items: { type: 'string' }, maxItems: 2 }, tags: { type: 'array', items: { type: 'string' } } } })
    expect(fs.map((f) => [f.name, f.kind, f.separator])).toEqual([
      ['seed_ideas', 'list', '\n'],
      ['tags', 'list', ','],
    ])
    const v = initialValues(fs, {}, { seed_ideas: ['a, with a comma', 'b'], tags: ['x', 'y'] })
    expect(v).toEqual({ seed_ideas: 'a, with a comma\nb', tags: 'x, y' })
    expect(toParams(fs, { seed_ideas: 'one, two\r\n\nthree', tags: 'p, q' })).toEqual({ seed_ideas: ['one, two', 'three'], tags: ['p', 'q'] })
    expect(validateField(fs[0], 'a\nb\nc')).toBe('Seed ideas takes at most 2 items')
  })

  it('finds the field a message is about when the API names none', () => {
    expect(fieldInMessage(fields, 'spark parameters: num_top_candidates (4) must not exceed num_candidates (3)')).toBe('num_top_candidates')
    expect(fieldInMessage(fields, 'topic must not be empty')).toBe('topic')
    expect(fieldInMessage(fields, 'temperatures.generate must be 0..2, got 3')).toBe('temperatures.generate')
    expect(fieldInMessage(fields, 'the provider is down')).toBeUndefined()
  })
})

describe('fieldInGroup', () => {
  const fields = fieldsOf({
    type: 'object',
    properties: {
      profile: {
        type: 'object',
        properties: { academic_program: { type: 'string' }, field_of_study: { type: 'string' } },
      },
      max_refinements: { type: 'integer' },
    },
  })

  it("finds the control of a group's error in its message", () => {
    expect(fieldInGroup(fields, 'params.profile', 'params: profile: academic_program must not be empty')).toBe('profile.academic_program')
    expect(fieldInGroup(fields, 'params.profile', 'params: profile: field_of_study is too long')).toBe('profile.field_of_study')
  })

  it('looks only inside the group the API names', () => {
    expect(fieldInGroup(fields, 'params.profile', 'profile: max_refinements must be positive')).toBeUndefined()
    expect(fieldInGroup(fields, 'params.unknown', 'max_refinements must be positive')).toBeUndefined()
  })

  it('searches the whole form without a field, and no form field for one outside the parameters', () => {
    expect(fieldInGroup(fields, undefined, 'max_refinements must be positive')).toBe('max_refinements')
    expect(fieldInGroup(fields, 'params', 'max_refinements must be positive')).toBe('max_refinements')
    expect(fieldInGroup(fields, 'tags', 'max_refinements must be positive')).toBeUndefined()
  })
})
