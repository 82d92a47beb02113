package assess

import (
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"testing"

	"github.com/madspark/madspark/engine"
	"github.com/madspark/madspark/llm"
	"github.com/madspark/madspark/provider/openai"
	"github.com/madspark/madspark/provider/openai/openaitest"
)

var draftRE = regexp.MustCompile(`Draft (\d+) of the analysis`)

// variedReplies answers like wireReply with more to read: the reviewer
// rejects each idea's first draft with issues to fix and approves the
// second, the fact checker finds claims of two kinds, the judge gives each
// criterion another grade, and the synthesizer names patterns.
func variedReplies() func(*openaitest.ChatRequest) openaitest.Reply {
	base := wireReply(func(n int) string { return wireAnalysis(140, "", fmt.Sprintf("\nDraft %d of the analysis.\n", n)) })
	return func(req *openaitest.ChatRequest) openaitest.Reply {
		r := base(req)
		var v map[string]any
		if req.ResponseFormat == nil || json.Unmarshal([]byte(r.Content), &v) != nil {
			return r
		}
		switch req.ResponseFormat.JSONSchema.Name {
		case "assess_reviewer_feedback":
			v["strengths"] = []string{"clear problem", `customers "named" by need`}
			v["minor_suggestions"] = []string{"shorten the intro", "add a date"}
			if m := draftRE.FindStringSubmatch(req.Prompt()); m != nil && m[1][len(m[1])-1]%2 == 1 {
				v["iteration_recommendation"] = "reject"
				v["critical_issues"] = []any{map[string]any{"section": "Market", "issue": "No market size.", "suggestion": "Give a figure with its source."}}
				v["improvements"] = []any{map[string]any{"section": "Risks", "suggestion": "Rank the risks."}}
			}
		case "assess_fact_check":
			v["claims"] = []any{
				map[string]any{"claim": "Labs replace equipment every five years", "section": "The Problem", "status": "unverifiable", "source": "", "note": "no source given"},
				map[string]any{"claim": "Refurbished units cost half as much", "section": "Solution", "status": "supported", "source": "search result 1", "note": "matches the listing"},
			}
		case "assess_judgement":
			for i, c := range []string{"market_potential", "competitive_landscape", "technical_feasibility", "capital_requirements", "regulatory_risks", "execution_difficulty", "evidence_quality"} {
				v["grades"].(map[string]any)[c] = map[string]any{"grade": []string{"A", "B", "C", "D", "F", "B", "A"}[i], "rationale": "Because of " + c + "."}
			}
			v["recommendation"] = "refine"
		case "assess_synthesis":
			v["patterns"] = []string{"thin evidence", `strong "repeat" demand`, "high capital needs"}
		}
		b, _ := json.Marshal(v)
		r.Content = string(b)
		return r
	}
}

// TestSmallModelShapes runs two assessments with web research, review,
// fact check and judge, then their synthesis, through the OpenAI provider
// against a model whose every JSON reply comes in the formats and shapes
// of small local models, with the schema sent and with it in the prompt:
// each run completes with the clean run's queries, verdicts, claims,
// grades and ranking, the formats and shapes recorded as repairs, and
// only the replies that need it asked again (see openaitest.ShapeCheck).
func TestSmallModelShapes(t *testing.T) {
	pipe, err := New(Config{})
	if err != nil {
		t.Fatal(err)
	}
	openaitest.ShapeCheck{
		Base:   variedReplies,
		Agents: pipe.StructuredAgents(),
		// Where the files went: the output directory, and the log
		// directory named after the time.
		Drop: []string{"output_dir", "log_dir", "messages", "run_summary"},
		Run: func(t *testing.T, srv *openaitest.Server, mode string) (any, []llm.Repair, error) {
			client := openai.New(openai.Config{BaseURL: srv.URL, APIKey: "sk-test", Model: "small-3b", Structured: mode})
			pipe, err := New(Config{Searcher: newTavily(t, "").provider()})
			if err != nil {
				t.Fatal(err)
			}
			e := &engine.Engine{Store: newDB(t), Client: client}
			dir := t.TempDir()
			var out []any
			var repairs []llm.Repair
			for _, idea := range []string{"A subscription service for refurbished lab equipment", "A marketplace for used pianos"} {
				res, err := assessOver(t, e, pipe, params(dir, func(p *Params) {
					p.Idea, p.MinWords, p.Mode, p.FactCheck = idea, 100, AnalyzeReviewAndJudge, true
				}))
				if err != nil {
					return out, repairs, err
				}
				out, repairs = append(out, res), append(repairs, res.Repairs...)
			}
			r, err := e.Start(context.Background(), runInfo(), nil)
			if err != nil {
				t.Fatal(err)
			}
			s, err := pipe.Synthesize(context.Background(), r, SynthesisParams{OutputDir: dir, Top: 2})
			if err != nil {
				return out, repairs, err
			}
			return append(out, s), append(repairs, s.Repairs...), nil
		},
	}.Check(t, openai.StructuredNative, openai.StructuredPrompt)
}
