package proposal

import (
	"encoding/json"
	"testing"

	"github.com/madspark/madspark/llm"
	"github.com/madspark/madspark/provider/openai"
	"github.com/madspark/madspark/provider/openai/openaitest"
)

// variedReply is wireProposalReply with more to read: lists of several
// items, every enum away from its first value, tools of each access, and
// a quality control that finds an issue and sends the objectives back
// once.
func variedReply(req *openaitest.ChatRequest) openaitest.Reply {
	r := wireProposalReply(req)
	var v map[string]any
	if req.ResponseFormat == nil || json.Unmarshal([]byte(r.Content), &v) != nil {
		return r
	}
	switch req.ResponseFormat.JSONSchema.Name {
	case schemaProblem:
		v["secondary_questions"] = []string{"Who benefits most?", `Does the "effect" last a term?`, "What does it cost a school?"}
		v["key_variables"] = []string{"maths score", "attendance", "tutor hours"}
	case schemaObjectives:
		v["alignment_check"].(map[string]any)["verdict"] = "partially_aligned"
	case schemaMethodology:
		v["methodology_type"] = "mixed"
		v["timeline_fit"].(map[string]any)["verdict"] = "tight"
		v["alternative_methodologies"] = []any{
			map[string]any{"name": "Case study", "methodology_type": "qualitative", "pros": []string{"depth", "context"}, "cons": []string{"no effect size", "one site"}, "why_not_chosen": "The question asks for an effect."},
			map[string]any{"name": "Randomised trial", "methodology_type": "quantitative", "pros": []string{"causal"}, "cons": []string{"costly", "slow", "hard to consent"}, "why_not_chosen": "Too large for 26 weeks."},
		}
	case schemaData:
		v["collection_techniques"] = []string{"tests", "attendance records", `short "think aloud" interviews`}
		v["recommended_tools"] = []any{
			map[string]any{"name": "R", "purpose": "analysis", "access": "free"},
			map[string]any{"name": "SPSS", "purpose": "checks", "access": "licensed"},
			map[string]any{"name": "Lab server", "purpose": "storage", "access": "institutional"},
		}
	case schemaQC:
		v["coherence_score"], v["feasibility_score"] = 0.74, 0.65
		v["issues_identified"] = []any{map[string]any{"severity": "major", "component": "objectives", "description": "SO3 repeats SO1.", "impact": "One question is measured twice."}}
		v["recommendations"] = []string{"Merge SO1 and SO3.", "Add a follow-up test."}
		v["refinement_targets"] = []string{"objectives"}
	}
	b, _ := json.Marshal(v)
	r.Content = string(b)
	return r
}

// TestSmallModelShapes runs a proposal with one refinement through the
// OpenAI provider against a model whose every reply comes in the formats
// and shapes of small local models, with the schema sent and with it in
// the prompt: each run completes with the clean run's stages, enums,
// scores and lists, the formats and shapes recorded as repairs, and only
// the replies that need it asked again (see openaitest.ShapeCheck).
func TestSmallModelShapes(t *testing.T) {
	pipe, err := New(offline(), nil)
	if err != nil {
		t.Fatal(err)
	}
	openaitest.ShapeCheck{
		Base:   func() func(*openaitest.ChatRequest) openaitest.Reply { return variedReply },
		Agents: pipe.StructuredAgents(),
		Run: func(t *testing.T, srv *openaitest.Server, mode string) (any, []llm.Repair, error) {
			client := openai.New(openai.Config{BaseURL: srv.URL, APIKey: "sk-test", Model: "small-3b", Structured: mode})
			res, err := proposalOver(t, client, offline(), params(10, func(p *Params) { p.MaxRefinements = 1 }))
			if res == nil {
				return nil, nil, err
			}
			return res, res.Repairs, err
		},
	}.Check(t, openai.StructuredNative, openai.StructuredPrompt)
}
