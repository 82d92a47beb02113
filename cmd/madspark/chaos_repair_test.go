package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"

	"github.com/madspark/madspark/provider/openai/openaitest"
)

var (
	chaosWireAsked = regexp.MustCompile(`Generate (\d+) new ideas`)
	chaosWireName  = regexp.MustCompile(`\*\*(.+?)\*\*`)
	chaosWirePair  = regexp.MustCompile(`(?m)^Pair (\d+):`)
)

// chaosWire answers chaos's agents over the wire as a well-behaved model
// would: as many ideas as asked, a judge that accepts four, and one
// verdict per tournament pair.
func chaosWire(req *openaitest.ChatRequest) openaitest.Reply {
	prompt := ""
	for _, m := range req.Messages {
		if m.Role == "user" {
			prompt = m.Content
			break
		}
	}
	names := func() []string {
		var out []string
		seen := map[string]bool{"Idea name": true}
		for _, m := range chaosWireName.FindAllStringSubmatch(prompt, -1) {
			if !seen[m[1]] {
				seen[m[1]] = true
				out = append(out, m[1])
			}
		}
		return out
	}
	name := ""
	if req.ResponseFormat != nil && req.ResponseFormat.JSONSchema != nil {
		name = req.ResponseFormat.JSONSchema.Name
	}
	var v any
	switch name {
	case "":
		var b strings.Builder
		switch {
		case strings.Contains(prompt, "Tangents from the chaos generator"):
			var n int
			fmt.Sscan(chaosWireAsked.FindStringSubmatch(prompt)[1], &n)
			track := "Alpha"
			if strings.Contains(req.System(), "practical") {
				track = "Beta"
			}
			for i := 1; i <= n; i++ {
				fmt.Fprintf(&b, "%d. **%s %d**: an idea that starts in one street and spreads.\n", i, track, i)
			}
		case strings.Contains(prompt, "Ideas to refine:"):
			for i, n := range names() {
				fmt.Fprintf(&b, "%d. **%s** — originality 7/10. Refinement: name an owner.\n", i+1, n)
			}
		default:
			b.WriteString("1. A tangent about tides.\n2. A tangent about kites.")
		}
		return openaitest.Reply{Content: b.String(), PromptTokens: 30, CompletionTokens: 20}
	case "chaos_judgement":
		list := []string{"a point"}
		accepted, rejected := []any{}, []any{}
		for _, n := range names() {
			if len(accepted) < 4 {
				accepted = append(accepted, map[string]any{"idea_name": n, "quality_score": 8 - 0.5*float64(len(accepted)), "feasibility_score": 7, "impact_score": 7, "originality_score": 7,
					"key_points": list, "implementation_path": "Pilot, then scale.", "required_resources": list, "success_metrics": list, "next_steps": list})
			} else {
				rejected = append(rejected, map[string]any{"idea_name": n, "rejection_reason": "Too vague.", "quality_score": 3, "fatal_flaw": "No owner."})
			}
		}
		v = map[string]any{"accepted_ideas": accepted, "rejected_ideas": rejected, "synthesis": "Start small.",
			"top_recommendations": list, "strategic_insights": list, "unresolved_questions": list}
	case "chaos_comparisons":
		results := []any{}
		for _, m := range chaosWirePair.FindAllStringSubmatch(prompt, -1) {
			var i int
			fmt.Sscan(m[1], &i)
			results = append(results, map[string]any{"pair": i, "winner": "a", "reason": "Clearer first step."})
		}
		v = map[string]any{"results": results}
	default:
		return openaitest.Reply{Content: "unexpected schema " + name}
	}
	b, _ := json.Marshal(v)
	return openaitest.Reply{Content: string(b), PromptTokens: 30, CompletionTokens: 20}
}

// TestChaosRepairsEndToEnd runs chaos with --tournament against a model
// that gets a judge score, the tournament's pair numbers and a creative
// track's length wrong: the run succeeds with the repairs in its JSON
// output, its files and its summary line.
func TestChaosRepairsEndToEnd(t *testing.T) {
	var mu sync.Mutex
	creative := 0
	flawed := openaitest.Imperfect(chaosWire, map[string][]openaitest.Flaw{
		"chaos_judgement":   {openaitest.Set("accepted_ideas/0/quality_score", 4.9)},
		"chaos_comparisons": {openaitest.Add("results/*/pair", 1), openaitest.Always},
	})
	respond := func(req *openaitest.ChatRequest) openaitest.Reply {
		r := flawed(req)
		if req.ResponseFormat == nil && strings.Contains(req.Messages[len(req.Messages)-1].Content, "Tangents from the chaos generator") {
			mu.Lock()
			creative++
			if creative == 1 {
				// Track A writes twelve ideas for the five asked.
				r.Content += strings.Replace(r.Content, "Alpha", "Extra", -1) + "6. **Extra 6**: one more.\n7. **Extra 7**: and another.\n"
			}
			mu.Unlock()
		}
		return r
	}
	srv := openaitest.NewServer(t, respond)
	dir := t.TempDir()
	env := map[string]string{"OPENAI_BASE_URL": srv.URL, "OPENAI_API_KEY": "sk-test", "MADSPARK_MODEL": "small-3b", "MADSPARK_DB": filepath.Join(t.TempDir(), "m.db")}
	r := invoke(t, env, "chaos", "reduce food waste in cities", "--ideas-per-track", "5", "--tournament", "--seed", "3", "--output-dir", dir, "--output-format", "json")
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	var out struct {
		RunID  string `json:"run_id"`
		Result struct {
			Repairs    json.RawMessage `json:"repairs"`
			Accepted   []json.RawMessage
			Tournament *struct{ Comparisons int } `json:"tournament"`
			Iterations []struct {
				CreativeA string `json:"creative_a"`
			} `json:"iterations"`
		} `json:"result"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &out); err != nil {
		t.Fatalf("%v: %s", err, r.stdout)
	}
	got := repairRules(t, out.Result.Repairs)
	for rule, n := range map[string]int{"chaos.judge/consistency": 1, "chaos.compare/index": 2, "chaos.creative/count": 1} {
		if got[rule] != n {
			t.Errorf("%s repairs %d, want %d: %v", rule, got[rule], n, got)
		}
	}
	if len(out.Result.Accepted) != 3 || out.Result.Tournament == nil || out.Result.Tournament.Comparisons != 2 || strings.Contains(out.Result.Iterations[0].CreativeA, "Extra") {
		t.Fatalf("result %+v", out.Result)
	}
	// chaos 1, creative 2, refine 2, judge 1, compare 2 (3 ideas: 2 rounds of one pair): no re-ask.
	if n := len(srv.Requests()); n != 8 {
		t.Errorf("%d calls, want 8", n)
	}
	saved, err := os.ReadFile(filepath.Join(dir, "result.json"))
	if err != nil || !strings.Contains(string(saved), `"rule": "consistency"`) {
		t.Fatalf("result.json lacks the repairs: %v", err)
	}
	// Its summary line counts them, once.
	summary, _ := os.ReadFile(filepath.Join(dir, "final_output.txt"))
	if line := regexp.MustCompile(`(?m)^run .*$`).FindString(string(summary)); !strings.Contains(line, "· 4 repairs") || strings.Count(line, "repair") != 1 {
		t.Fatalf("final_output.txt: summary line %q", line)
	}
}

// TestChaosTournamentFailureKeepsIterations: a tournament whose replies are
// never usable fails the run at that step; the finished iteration's files
// and the result so far are written, and resume finishes the run with the
// tournament alone.
func TestChaosTournamentFailureKeepsIterations(t *testing.T) {
	var mu sync.Mutex
	healthy := false
	respond := func(req *openaitest.ChatRequest) openaitest.Reply {
		r := chaosWire(req)
		mu.Lock()
		defer mu.Unlock()
		if !healthy && req.ResponseFormat != nil && req.ResponseFormat.JSONSchema.Name == "chaos_comparisons" {
			r.Content = "The first idea wins every pair."
		}
		return r
	}
	srv := openaitest.NewServer(t, respond)
	dir := t.TempDir()
	env := map[string]string{"OPENAI_BASE_URL": srv.URL, "OPENAI_API_KEY": "sk-test", "MADSPARK_MODEL": "small-3b", "MADSPARK_DB": filepath.Join(t.TempDir(), "m.db")}
	r := invoke(t, env, "chaos", "reduce food waste in cities", "--ideas-per-track", "5", "--tournament", "--seed", "3", "--output-dir", dir)
	if r.code != 1 || !strings.Contains(r.stderr, "the tournament step failed; the 1 finished iteration(s) are written to") || !strings.Contains(r.stderr, "madspark resume") {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	for _, f := range []string{"iteration_1/judge.json", "iteration_1/creative_a.txt", "ideas.json"} {
		if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
			t.Fatalf("%s not written: %v", f, err)
		}
	}
	var partial struct {
		RunID  string `json:"run_id"`
		Result struct {
			FailedStep string            `json:"failed_step"`
			Iterations []json.RawMessage `json:"iterations"`
			Accepted   []json.RawMessage `json:"accepted"`
		} `json:"result"`
	}
	b, _ := os.ReadFile(filepath.Join(dir, "result.json"))
	if err := json.Unmarshal(b, &partial); err != nil || partial.Result.FailedStep != "tournament" || len(partial.Result.Iterations) != 1 || len(partial.Result.Accepted) != 4 {
		t.Fatalf("result so far: %v %s", err, b)
	}
	if s, _ := os.ReadFile(filepath.Join(dir, "final_output.txt")); !strings.Contains(string(s), "The tournament step failed") || !strings.Contains(string(s), "ACCEPTED IDEAS (4)") {
		t.Fatalf("final_output.txt: %s", s)
	}

	mu.Lock()
	healthy = true
	mu.Unlock()
	before := len(srv.Requests())
	r = invoke(t, env, "resume", partial.RunID, "--output-dir", dir, "--output-format", "json")
	if r.code != 0 {
		t.Fatalf("resume: exit %d: %s", r.code, r.stderr)
	}
	for _, q := range srv.Requests()[before:] {
		if q.ResponseFormat == nil || q.ResponseFormat.JSONSchema.Name != "chaos_comparisons" {
			t.Fatalf("resume called an iteration's agent again: %s", q.Prompt())
		}
	}
	b, _ = os.ReadFile(filepath.Join(dir, "result.json"))
	if !strings.Contains(string(b), `"tournament": {`) || strings.Contains(string(b), "failed_step") {
		t.Fatalf("resumed result.json: %s", b)
	}
}
