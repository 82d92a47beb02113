package inspect_test

import (
	"bytes"
	"context"
	"encoding/json"
	"maps"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/madspark/madspark"
	"github.com/madspark/madspark/engine"
	"github.com/madspark/madspark/inspect"
	"github.com/madspark/madspark/llm"
	"github.com/madspark/madspark/middleware"
	"github.com/madspark/madspark/pipeline"
	"github.com/madspark/madspark/pipeline/assess"
	"github.com/madspark/madspark/pipeline/chaos"
	"github.com/madspark/madspark/pipeline/debate"
	"github.com/madspark/madspark/pipeline/proposal"
	"github.com/madspark/madspark/pipeline/spark"
	"github.com/madspark/madspark/provider/mock"
	"github.com/madspark/madspark/scholar"
	"github.com/madspark/madspark/search"
	"github.com/madspark/madspark/store/sqlite"
)

// TestEveryPipeline runs each of the five pipelines in mock mode through a
// cached, metered client stack and a real journal, and checks that its
// steps view shows every step with its calls: agent, model, the prompt
// with its system message, the raw reply, tokens and times. A second,
// identical run is answered by the cache and says so (but for chaos, whose
// idea memory makes the second run ask other questions).
func TestEveryPipeline(t *testing.T) {
	ctx := context.Background()
	db, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "m.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	responders := map[string]mock.Responder{}
	for _, m := range []map[string]mock.Responder{spark.MockResponders(), chaos.MockResponders(), debate.MockResponders(), assess.MockResponders(), proposal.MockResponders()} {
		maps.Copy(responders, m)
	}
	reg := pipeline.NewRegistry()
	count, err := debate.NewTokenCounter()
	if err != nil {
		t.Fatal(err)
	}
	for _, def := range []func() (pipeline.Definition, error){
		spark.Definition,
		func() (pipeline.Definition, error) { return chaos.Definition(db) },
		func() (pipeline.Definition, error) { return debate.Definition(count, nil, nil) },
		func() (pipeline.Definition, error) { return assess.Definition(assess.Config{Mock: true}) },
		func() (pipeline.Definition, error) {
			return proposal.Definition([]search.Provider{scholar.NewOffline()}, nil, nil)
		},
	} {
		d, err := def()
		if err != nil {
			t.Fatal(err)
		}
		if err := reg.Register(d); err != nil {
			t.Fatal(err)
		}
	}
	stack := llm.Chain(mock.New(responders),
		middleware.Cache(middleware.CacheConfig{Provider: mock.Name, DefaultModel: mock.Model, Store: db}),
		middleware.Meter(middleware.DefaultPrices()))
	e := &engine.Engine{Store: db, Client: stack}
	profile := `{"academic_program":"Master's","field_of_study":"Education","research_area":"peer tutoring",` +
		`"weekly_hours":10,"total_timeline":{"value":6,"unit":"months"},"existing_skills":["surveys"],"missing_skills":["statistics"],` +
		`"constraints":["no travel budget"],"additional_context":"A partner school."}`
	for _, tc := range []struct{ name, params, agentPrefix string }{
		{"spark", `{"topic":"urban farming","num_candidates":3,"num_top_candidates":2}`, "spark."},
		{"chaos", `{"prompt":"food waste","seed":3}`, "chaos."},
		{"debate", `{"query":"Compare B-trees and LSM trees step by step","no_search":true}`, "debate."},
		{"assess", `{"idea":"A subscription service for refurbished lab equipment","mode":"analyze_review_and_judge"}`, "assess."},
		{"proposal", `{"profile":` + profile + `}`, "proposal."},
	} {
		t.Run(tc.name, func(t *testing.T) {
			def, err := reg.Get(tc.name)
			if err != nil {
				t.Fatal(err)
			}
			p, err := reg.Decode(tc.name, json.RawMessage(tc.params))
			if err != nil {
				t.Fatal(err)
			}
			var views [2]*inspect.View
			for i := range views {
				r, err := e.Start(ctx, engine.RunInfo{Pipeline: tc.name, Mode: "mock", Provider: mock.Name, Model: mock.Model, Params: p}, nil)
				if err != nil {
					t.Fatal(err)
				}
				res, err := def.Run(ctx, r, p)
				if err := r.Finish(ctx, res, err); err != nil {
					t.Fatal(err)
				}
				if views[i], err = inspect.Load(ctx, db, r.ID()); err != nil {
					t.Fatal(err)
				}
				if views[i].Status != madspark.RunSucceeded {
					t.Fatalf("run %d: status %s", i, views[i].Status)
				}
			}
			v := views[0]
			calls := 0
			for i, s := range v.Steps {
				if i > 0 && s.StartedAt.Before(v.Steps[i-1].StartedAt) {
					t.Errorf("step %s starts before the step listed before it", s.Key)
				}
				if s.Status != madspark.StepDone || s.FinishedAt.Before(s.StartedAt) {
					t.Errorf("step %s: status %s, %v..%v", s.Key, s.Status, s.StartedAt, s.FinishedAt)
				}
				if len(s.Calls) == 0 {
					continue
				}
				calls += len(s.Calls)
				if !strings.HasPrefix(s.Agent, tc.agentPrefix) || s.Model != mock.Model || s.Attempts < 1 || s.Cached {
					t.Errorf("step %s: agent %q model %q attempts %d cached %v", s.Key, s.Agent, s.Model, s.Attempts, s.Cached)
				}
				if len(s.Prompt) < 2 || s.Prompt[0].Role != "system" || s.Prompt[0].Content == "" || s.Prompt[1].Role != "user" || s.Response == "" {
					t.Errorf("step %s: prompt %+v response %q", s.Key, s.Prompt, s.Response)
				}
				if s.InputTokens == 0 || s.OutputTokens == 0 || s.Repairs == nil {
					t.Errorf("step %s: tokens %d/%d repairs %v", s.Key, s.InputTokens, s.OutputTokens, s.Repairs)
				}
				for _, c := range s.Calls {
					if c.StartedAt.Before(s.StartedAt) || c.Response == "" || c.Provider != mock.Name {
						t.Errorf("step %s: call %+v", s.Key, c)
					}
				}
			}
			if calls == 0 {
				t.Fatal("no step made a call")
			}
			if tc.name == "chaos" {
				return // its idea memory changes the second run's prompts
			}
			// The same run again: every call comes from the cache.
			cachedCalls := 0
			for _, s := range views[1].Steps {
				for _, c := range s.Calls {
					cachedCalls++
					if !c.Cached || c.Response == "" {
						t.Errorf("second run, step %s: call not cached: %+v", s.Key, c)
					}
				}
				if len(s.Calls) > 0 && !s.Cached {
					t.Errorf("second run, step %s not marked cached", s.Key)
				}
			}
			if cachedCalls != calls {
				t.Errorf("second run made %d calls, first %d", cachedCalls, calls)
			}
		})
	}
}

func TestTextAndJSON(t *testing.T) {
	t0 := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	run := &madspark.Run{ID: "r1", Pipeline: "spark", Status: madspark.RunSucceeded, CreatedAt: t0}
	steps := []*madspark.Step{{
		RunID: "r1", Key: "evaluate", Status: madspark.StepDone, StartedAt: t0.Add(2 * time.Second), FinishedAt: t0.Add(3 * time.Second),
		Usage:   llm.Usage{LLMCalls: 2, InputTokens: 30, OutputTokens: 12, CostUSD: 0.0125},
		Repairs: []llm.Repair{{Step: "evaluate", Agent: "spark.evaluate", Rule: "range", Action: "score 10.5 → 10"}},
		Calls: []madspark.Call{
			{Agent: "spark.evaluate", Provider: "openai", Model: "gpt-4o-mini", System: "Judge.", Messages: []llm.Message{{Role: llm.RoleUser, Content: "Score it."}},
				Response: "not json", Attempt: 1, Retries: 1, StartedAt: t0.Add(2 * time.Second), Latency: 400 * time.Millisecond},
			{Agent: "spark.evaluate", Provider: "openai", Model: "gpt-4o-mini", System: "Judge.", Messages: []llm.Message{
				{Role: llm.RoleUser, Content: "Score it."}, {Role: llm.RoleAssistant, Content: "not json"}, {Role: llm.RoleUser, Content: "Fix it."}},
				Response: `{"score":7}`, Attempt: 2, StartedAt: t0.Add(2500 * time.Millisecond), Latency: 500 * time.Millisecond},
		},
	}, {RunID: "r1", Key: "generate", Status: madspark.StepDone, StartedAt: t0, FinishedAt: t0.Add(time.Second)}}
	v := inspect.Build(run, steps)
	if len(v.Steps) != 2 || v.Steps[0].Key != "generate" || v.Step("evaluate") == nil || v.Step("nope") != nil {
		t.Fatalf("steps = %+v", v.Steps)
	}
	ev := v.Step("evaluate")
	if len(ev.Repairs) != 1 || ev.Repairs[0] != (inspect.Repair{Agent: "spark.evaluate", Rule: "range", Action: "score 10.5 → 10"}) ||
		v.Step("generate").Repairs == nil || len(v.Step("generate").Repairs) != 0 {
		t.Errorf("repairs = %+v / %+v", ev.Repairs, v.Step("generate").Repairs)
	}
	if ev.Attempts != 2 || ev.LatencyMS != 1000 || ev.Response != `{"score":7}` || len(ev.Prompt) != 4 || ev.Prompt[0].Content != "Judge." {
		t.Errorf("evaluate = %+v", ev)
	}
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	var raw struct {
		Steps []map[string]any `json:"steps"`
	}
	if err := json.Unmarshal(b, &raw); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"key", "agent", "model", "status", "attempts", "cached", "input_tokens", "output_tokens", "latency_ms", "cost_usd", "repairs", "prompt", "response", "started_at"} {
		for _, s := range raw.Steps {
			if _, ok := s[k]; !ok {
				t.Errorf("step %v has no %q", s["key"], k)
			}
		}
	}
	var tb bytes.Buffer
	if err := inspect.WriteTable(&tb, v); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(tb.String()), "\n")
	if len(lines) != 4 || !strings.HasPrefix(lines[0], "STEP") || !strings.HasPrefix(lines[1], "generate") ||
		!strings.Contains(lines[2], "spark.evaluate") || !strings.Contains(lines[2], "$0.0125") || !strings.Contains(lines[2], "1s") || !strings.HasSuffix(strings.TrimSpace(lines[2]), " 1") {
		t.Errorf("table:\n%s", tb.String())
	}
	var sb bytes.Buffer
	if err := inspect.WriteStep(&sb, ev); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"call 1 of 2", "retry 1", "--- system ---\nJudge.", "--- assistant ---\nnot json", "--- response ---\n{\"score\":7}"} {
		if !strings.Contains(sb.String(), want) {
			t.Errorf("step text lacks %q:\n%s", want, sb.String())
		}
	}
}

// TestToolCallsShown: a call's tools, the tool calls of its messages and
// of its reply, and the results it sent are in the view and its text.
func TestToolCallsShown(t *testing.T) {
	t0 := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	run := &madspark.Run{ID: "r1", Pipeline: "debate", Status: madspark.RunSucceeded, CreatedAt: t0}
	call := llm.ToolCall{ID: "call_1", Name: "weather", Arguments: `{"city":"Oslo"}`}
	steps := []*madspark.Step{{RunID: "r1", Key: "direct", Status: madspark.StepDone, StartedAt: t0, FinishedAt: t0.Add(time.Second),
		Calls: []madspark.Call{
			{Agent: "debate.direct", Messages: []llm.Message{{Role: llm.RoleUser, Content: "weather?"}}, Tools: []llm.Tool{{Name: "weather"}, {Name: "clock"}},
				ToolChoice: &llm.ToolChoice{Mode: llm.ToolAuto}, ToolCalls: []llm.ToolCall{call}, FinishReason: llm.FinishToolCalls, Attempt: 1, Usage: llm.Usage{LLMCalls: 1}},
			{Agent: "debate.direct", Messages: []llm.Message{{Role: llm.RoleUser, Content: "weather?"}, {Role: llm.RoleAssistant, ToolCalls: []llm.ToolCall{call}},
				{Role: llm.RoleTool, ToolCallID: "call_1", Content: "sunny"}}, Tools: []llm.Tool{{Name: "weather"}}, Response: "It is sunny.", Attempt: 1, Usage: llm.Usage{LLMCalls: 1}},
		}}}
	v := inspect.Build(run, steps)
	calls := v.Step("direct").Calls
	if len(calls) != 2 || len(calls[0].ToolCalls) != 1 || calls[0].ToolCalls[0] != call || len(calls[0].Tools) != 2 ||
		calls[1].Messages[1].ToolCalls[0] != call || calls[1].Messages[2].ToolCallID != "call_1" {
		t.Fatalf("calls %+v", calls)
	}
	var b strings.Builder
	if err := inspect.WriteStep(&b, v.Step("direct")); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"--- tools ---\nweather, clock (tool choice auto)", `→ call_1 weather({"city":"Oslo"})`, "--- tool call_1 ---\nsunny"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("text lacks %q:\n%s", want, b.String())
		}
	}
}
