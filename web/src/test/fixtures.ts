import type { JSONSchema } from '../api/types'

/** A schema shaped like spark's params_schema, with $defs as Go's generator writes them. */
export const sparkSchema: JSONSchema = {
  $ref: '#/$defs/Params',
  $defs: {
    Params: {
      type: 'object',
      required: ['topic'],
      properties: {
        topic: { type: 'string', title: 'Topic', minLength: 1, maxLength: 2000 },
        context: { type: 'string', maxLength: 5000 },
        num_candidates: { type: 'integer', title: 'Ideas generated', minimum: 1, maximum: 20, default: 5 },
        num_top_candidates: { type: 'integer', minimum: 1, maximum: 5, default: 3 },
        temperature_preset: { type: 'string' },
        temperatures: { $ref: '#/$defs/Temperatures' },
        enhanced_reasoning: { type: 'boolean', description: 'multi-dimensional evaluation' },
        novelty_threshold: { type: 'number', exclusiveMinimum: 0, maximum: 1, default: 0.8 },
        output_format: { type: 'string', enum: ['brief', 'detailed', 'json'] },
        tags: { type: 'array', items: { type: 'string' }, maxItems: 3 },
        run_id: { type: 'string', readOnly: true } as JSONSchema,
      },
    },
    Temperatures: {
      type: 'object',
      properties: {
        generate: { type: 'number', minimum: 0, maximum: 2 },
        evaluate: { type: 'number', minimum: 0, maximum: 2 },
      },
    },
  },
}

const dims = (base: number) => ({
  feasibility: base,
  innovation: base + 1,
  impact: base + 0.5,
  cost_effectiveness: base - 1,
  scalability: base,
  risk_assessment: base - 0.5,
  sustainability: base + 0.2,
})

/** A spark result as the API returns it, with enhanced reasoning on. */
export const sparkResult = {
  topic: 'urban farming',
  context: 'low-cost',
  generated: 5,
  filtered: 1,
  candidates: [
    {
      idea: 'Rooftop hydroponics co-ops: neighbours share one system',
      initial_score: 6.1,
      initial_critique: 'Promising but water costs are unclear.',
      advocacy: 'STRENGTHS:\n• cheap to start\n• builds community',
      skepticism: 'RISKS & CHALLENGES:\n• roof load limits',
      improved_idea: 'Rooftop hydroponics co-ops with a shared rain-water tank',
      improved_score: 7.4,
      improved_critique: 'Water costs addressed.',
      score_delta: 1.3,
      multi_dimensional_evaluation: { dimensions: dims(6), mean: 6.0, weighted_score: 6.1 },
      improved_multi_dimensional_evaluation: { dimensions: dims(7), mean: 7.0, weighted_score: 7.2 },
    },
    {
      idea: 'Vertical farms in empty parking garages',
      initial_score: 5.5,
      initial_critique: 'Lighting is expensive.',
      advocacy: 'STRENGTHS:\n• unused space',
      skepticism: 'CRITICAL FLAWS:\n• energy',
      improved_idea: 'Solar-lit vertical farms in parking garages',
      improved_score: 5.2,
      improved_critique: 'Still energy hungry.',
      score_delta: -0.3,
    },
  ],
}

/** Spark's params_schema as the pipeline registry derives it: no $ref, one default object for the temperatures. */
export const registrySparkSchema: JSONSchema = {
  type: 'object',
  required: ['topic'],
  properties: {
    topic: { type: 'string', description: 'Main subject or theme' },
    context: { type: 'string', description: 'Additional criteria or constraints', default: '' },
    num_candidates: { type: 'integer', minimum: 1, maximum: 20, description: 'Number of ideas to generate', default: 5 },
    num_top_candidates: { type: 'integer', minimum: 1, maximum: 5, description: 'Best ideas argued over and improved', default: 3 },
    temperatures: {
      type: 'object',
      properties: {
        generate: { type: 'number', minimum: 0, maximum: 2 },
        evaluate: { type: 'number', minimum: 0, maximum: 2 },
        advocate: { type: 'number', minimum: 0, maximum: 2 },
        skeptic: { type: 'number', minimum: 0, maximum: 2 },
        improve: { type: 'number', minimum: 0, maximum: 2 },
      },
      required: ['generate', 'evaluate', 'advocate', 'skeptic', 'improve'],
      default: { generate: 0.9, evaluate: 0.3, advocate: 0.5, skeptic: 0.5, improve: 0.9 },
    },
    enhanced_reasoning: { type: 'boolean', description: 'Multi-dimensional evaluation (+2 calls)', default: false },
    novelty_filter: { type: 'boolean', default: true },
    novelty_threshold: { type: 'number', exclusiveMinimum: 0, maximum: 1, default: 0.8 },
  },
}
