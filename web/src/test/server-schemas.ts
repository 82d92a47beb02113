import type { JSONSchema } from '../api/types'

// The params_schema and defaults that GET /api/pipelines returns for
// spark, chaos and proposal, as the server derives them from the Go
// parameter types.

export const sparkServerSchema: JSONSchema = {
  "properties": {
    "topic": {
      "type": "string",
      "title": "Topic",
      "description": "The main subject or theme of the ideas"
    },
    "context": {
      "type": "string",
      "title": "Context",
      "description": "Additional criteria or constraints the ideas must meet",
      "default": ""
    },
    "num_candidates": {
      "type": "integer",
      "maximum": 20,
      "minimum": 1,
      "title": "Ideas to generate",
      "description": "How many ideas are generated and scored",
      "default": 5
    },
    "num_top_candidates": {
      "type": "integer",
      "maximum": 5,
      "minimum": 1,
      "title": "Ideas to improve",
      "description": "How many of the best ideas are argued over and improved (at most the ideas generated)",
      "default": 3
    },
    "temperatures": {
      "properties": {
        "generate": {
          "type": "number",
          "maximum": 2,
          "minimum": 0,
          "title": "Generation",
          "description": "Temperature of the idea generator",
          "default": 0.9
        },
        "evaluate": {
          "type": "number",
          "maximum": 2,
          "minimum": 0,
          "title": "Evaluation",
          "description": "Temperature of the critic that scores ideas",
          "default": 0.3
        },
        "advocate": {
          "type": "number",
          "maximum": 2,
          "minimum": 0,
          "title": "Advocacy",
          "description": "Temperature of the advocate who argues for an idea",
          "default": 0.5
        },
        "skeptic": {
          "type": "number",
          "maximum": 2,
          "minimum": 0,
          "title": "Skepticism",
          "description": "Temperature of the skeptic who argues against an idea",
          "default": 0.5
        },
        "improve": {
          "type": "number",
          "maximum": 2,
          "minimum": 0,
          "title": "Improvement",
          "description": "Temperature of the improver who rewrites the top ideas",
          "default": 0.9
        }
      },
      "additionalProperties": false,
      "type": "object",
      "title": "Temperatures",
      "description": "Sampling temperature of each role: higher is more varied, lower more focused",
      "default": {
        "advocate": 0.5,
        "evaluate": 0.3,
        "generate": 0.9,
        "improve": 0.9,
        "skeptic": 0.5
      }
    },
    "enhanced_reasoning": {
      "type": "boolean",
      "title": "Enhanced reasoning",
      "description": "Multi-dimensional evaluation of the ideas (+2 calls)",
      "default": false
    },
    "logical_inference": {
      "type": "boolean",
      "title": "Logical inference",
      "description": "Logical analysis of each top idea (+1 call)",
      "default": false
    },
    "novelty_filter": {
      "type": "boolean",
      "title": "Novelty filter",
      "description": "Drop near-duplicate ideas before they are evaluated",
      "default": true
    },
    "novelty_threshold": {
      "type": "number",
      "maximum": 1,
      "exclusiveMinimum": 0,
      "title": "Novelty threshold",
      "description": "Similarity above which an idea counts as a duplicate (with the novelty filter on)",
      "default": 0.8
    },
    "allow_fallbacks": {
      "type": "boolean",
      "title": "Allow fallbacks",
      "description": "Replace a failed stage with fallback values, marked in the result, instead of failing the run",
      "default": false
    },
    "seed_ideas": {
      "items": {
        "type": "string"
      },
      "type": "array",
      "maxItems": 10,
      "title": "Seed ideas",
      "description": "Ideas to build on, such as a remix of bookmarks"
    }
  },
  "additionalProperties": false,
  "type": "object",
  "required": [
    "topic"
  ]
}

export const sparkServerDefaults: Record<string, unknown> = {
  "allow_fallbacks": false,
  "context": "",
  "enhanced_reasoning": false,
  "logical_inference": false,
  "novelty_filter": true,
  "novelty_threshold": 0.8,
  "num_candidates": 5,
  "num_top_candidates": 3,
  "temperatures": {
    "advocate": 0.5,
    "evaluate": 0.3,
    "generate": 0.9,
    "improve": 0.9,
    "skeptic": 0.5
  }
}

export const chaosServerSchema: JSONSchema = {
  "properties": {
    "prompt": {
      "type": "string",
      "title": "Prompt",
      "description": "What to generate ideas for"
    },
    "iterations": {
      "type": "integer",
      "maximum": 10,
      "minimum": 1,
      "title": "Iterations",
      "description": "Rounds of the workflow, each building on the ideas accepted before",
      "default": 1
    },
    "chaos_seeds": {
      "type": "integer",
      "maximum": 50,
      "minimum": 1,
      "title": "Chaos seeds",
      "description": "Random concepts that seed the chaos generator",
      "default": 10
    },
    "seed": {
      "type": "integer",
      "title": "Random seed",
      "description": "Makes the sampling of seed concepts repeatable; leave empty for a random one"
    },
    "ideas_per_track": {
      "type": "integer",
      "maximum": 20,
      "minimum": 5,
      "title": "Ideas per track",
      "description": "Ideas each creative track is asked for",
      "default": 10
    },
    "model_a": {
      "type": "string",
      "title": "Track A model",
      "description": "Model of the first creative track; empty for the provider's model"
    },
    "model_b": {
      "type": "string",
      "title": "Track B model",
      "description": "Model of the second creative track; empty for the provider's model"
    },
    "temp_a": {
      "type": "number",
      "maximum": 2,
      "minimum": 0,
      "title": "Track A temperature",
      "description": "Sampling temperature of the first (hotter) creative track",
      "default": 1
    },
    "temp_b": {
      "type": "number",
      "maximum": 2,
      "minimum": 0,
      "title": "Track B temperature",
      "description": "Sampling temperature of the second (cooler) creative track",
      "default": 0.6
    },
    "accept_threshold": {
      "type": "number",
      "maximum": 10,
      "minimum": 0,
      "title": "Acceptance threshold",
      "description": "Lowest quality score (0-10) of an accepted idea",
      "default": 6
    },
    "memory": {
      "type": "string",
      "title": "Idea memory",
      "description": "Name of the idea memory to read and extend; empty for one per prompt",
      "default": ""
    },
    "tournament": {
      "type": "boolean",
      "title": "Tournament",
      "description": "Rank the accepted ideas by pairwise comparison into Elo ratings",
      "default": false
    },
    "evolve": {
      "type": "boolean",
      "title": "Evolve",
      "description": "Recombine the best ideas into new candidates, refined and judged like the others",
      "default": false
    }
  },
  "additionalProperties": false,
  "type": "object",
  "required": [
    "prompt"
  ]
}

export const chaosServerDefaults: Record<string, unknown> = {
  "accept_threshold": 6,
  "chaos_seeds": 10,
  "evolve": false,
  "ideas_per_track": 10,
  "iterations": 1,
  "memory": "",
  "temp_a": 1,
  "temp_b": 0.6,
  "tournament": false
}

export const proposalServerSchema: JSONSchema = {
  "properties": {
    "profile": {
      "properties": {
        "academic_program": {
          "type": "string",
          "maxLength": 300,
          "title": "Academic program",
          "description": "Degree or program, such as MSc Computer Science"
        },
        "field_of_study": {
          "type": "string",
          "maxLength": 300,
          "title": "Field of study",
          "description": "The discipline the research belongs to"
        },
        "research_area": {
          "type": "string",
          "maxLength": 300,
          "title": "Research area",
          "description": "The topic the proposal is about"
        },
        "weekly_hours": {
          "type": "integer",
          "maximum": 80,
          "minimum": 1,
          "title": "Hours a week",
          "description": "Time given to the research each week, in hours"
        },
        "total_timeline": {
          "properties": {
            "value": {
              "type": "integer",
              "minimum": 1,
              "title": "Length",
              "description": "How many weeks, months or years"
            },
            "unit": {
              "type": "string",
              "enum": [
                "weeks",
                "months",
                "years"
              ],
              "title": "Unit",
              "description": "The unit of the length"
            }
          },
          "additionalProperties": false,
          "type": "object",
          "required": [
            "value",
            "unit"
          ],
          "title": "Total timeline",
          "description": "The time available in total (2 weeks to 10 years)"
        },
        "existing_skills": {
          "items": {
            "type": "string"
          },
          "type": "array",
          "maxItems": 30,
          "title": "Existing skills",
          "description": "Skills the researcher has"
        },
        "missing_skills": {
          "items": {
            "type": "string"
          },
          "type": "array",
          "maxItems": 30,
          "title": "Skills to acquire",
          "description": "Skills the research needs that the researcher lacks"
        },
        "constraints": {
          "items": {
            "type": "string"
          },
          "type": "array",
          "maxItems": 30,
          "title": "Constraints",
          "description": "Limits on data, equipment, ethics or budget"
        },
        "additional_context": {
          "type": "string",
          "maxLength": 4000,
          "title": "Additional context",
          "description": "Anything else the proposal should take into account",
          "default": ""
        }
      },
      "additionalProperties": false,
      "type": "object",
      "required": [
        "academic_program",
        "field_of_study",
        "research_area",
        "weekly_hours",
        "total_timeline"
      ],
      "title": "Researcher profile",
      "description": "Who writes the proposal and with what time and skills"
    },
    "profile_source": {
      "type": "string",
      "title": "Profile source",
      "description": "Where the profile came from: interview, a profile file's name or api",
      "default": "api",
      "readOnly": true
    },
    "max_refinements": {
      "type": "integer",
      "maximum": 10,
      "minimum": 0,
      "title": "Refinement rounds",
      "description": "Quality-control rounds that refine the proposal at most",
      "default": 3
    },
    "no_search": {
      "type": "boolean",
      "title": "No literature search",
      "description": "Write the proposal without searching for literature",
      "default": false
    },
    "results_per_query": {
      "type": "integer",
      "maximum": 25,
      "minimum": 1,
      "title": "Results per query",
      "description": "Literature results asked of each source per query",
      "default": 5
    }
  },
  "additionalProperties": false,
  "type": "object",
  "required": [
    "profile"
  ]
}

export const proposalServerDefaults: Record<string, unknown> = {
  "max_refinements": 3,
  "no_search": false,
  "profile_source": "api",
  "results_per_query": 5
}
