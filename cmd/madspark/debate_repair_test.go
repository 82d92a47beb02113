package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/madspark/madspark/provider/openai/openaitest"
)

var debateWireLabel = regexp.MustCompile(`(?m)^Contribution ([A-Z]):`)

// debateWire answers the debate's agents over the wire as a well-behaved
// model would: handoffs inside the token budget, complete rankings and a
// plain-text answer.
func debateWire(req *openaitest.ChatRequest) openaitest.Reply {
	name := ""
	if req.ResponseFormat != nil && req.ResponseFormat.JSONSchema != nil {
		name = req.ResponseFormat.JSONSchema.Name
	}
	var v any
	switch name {
	case "debate_handoff":
		v = map[string]any{
			"context_summary":  strings.TrimSpace(strings.Repeat("Each part of the answer is stated plainly, with the reason it holds and the case where it fails. ", 9)),
			"key_points":       []string{"State the mechanism.", "Handle the edge cases.", "Measure first."},
			"confidence_score": 0.7,
		}
	case "debate_ranking":
		var labels []string
		for _, m := range debateWireLabel.FindAllStringSubmatch(req.Messages[len(req.Messages)-1].Content, -1) {
			labels = append(labels, m[1])
		}
		v = map[string]any{"ranking": labels, "reasons": "Most complete first."}
	case "":
		return openaitest.Reply{Content: "Use a token bucket per client, refill it at the allowed rate, and reject requests when it is empty.", PromptTokens: 40, CompletionTokens: 20}
	default:
		return openaitest.Reply{Content: "unexpected schema " + name}
	}
	b, _ := json.Marshal(v)
	return openaitest.Reply{Content: string(b), PromptTokens: 40, CompletionTokens: 30}
}

// debateFlaws are what a small model gets wrong in every debate: handoffs
// far under their token budget with the confidence as text, and rankings
// that name a contribution that does not exist and leave others out.
var debateFlaws = map[string][]openaitest.Flaw{
	"debate_handoff": {openaitest.Set("context_summary", "Short summary."), openaitest.AsText("confidence_score"), openaitest.Always},
	"debate_ranking": {openaitest.Map("ranking", func(v any) any { return []any{"Z", v.([]any)[0]} }), openaitest.Always},
}

// repairRules returns the agent/rule pairs of a repairs list.
func repairRules(t *testing.T, raw json.RawMessage) map[string]int {
	t.Helper()
	var reps []struct{ Step, Agent, Rule, Action string }
	if err := json.Unmarshal(raw, &reps); err != nil || reps == nil {
		t.Fatalf("repairs %s: %v", raw, err)
	}
	out := map[string]int{}
	for _, r := range reps {
		if r.Step == "" || r.Action == "" {
			t.Fatalf("repair without step or action: %+v", r)
		}
		out[r.Agent+"/"+r.Rule]++
	}
	return out
}

// TestDebateRepairsEndToEnd: a complex question asked of a model whose
// every handoff and ranking is imperfect but usable gets its answer, with
// the repairs in the JSON output and in the saved run.
func TestDebateRepairsEndToEnd(t *testing.T) {
	srv := openaitest.NewServer(t, openaitest.Imperfect(debateWire, debateFlaws))
	env := map[string]string{
		"OPENAI_BASE_URL": srv.URL, "OPENAI_API_KEY": "sk-test", "MADSPARK_MODEL": "small-3b",
		"MADSPARK_DB": filepath.Join(t.TempDir(), "m.db"),
	}
	r := invoke(t, env, "debate", "Explain step by step how to design a rate limiter", "--peer-review", "--no-search", "--no-cache", "--output-format", "json")
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	var out struct {
		RunID  string `json:"run_id"`
		Result struct {
			Path     string          `json:"path"`
			Answer   string          `json:"answer"`
			Repairs  json.RawMessage `json:"repairs"`
			Handoffs []struct {
				Tokens     int     `json:"tokens"`
				Confidence float64 `json:"confidence_score"`
			} `json:"handoffs"`
			Ranking []struct{ Points int } `json:"ranking"`
		} `json:"result"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &out); err != nil {
		t.Fatalf("%v: %s", err, r.stdout)
	}
	if out.Result.Path != "complex" || !strings.HasPrefix(out.Result.Answer, "Use a token bucket") || len(out.Result.Handoffs) != 3 || len(out.Result.Ranking) != 3 {
		t.Fatalf("result %+v", out.Result)
	}
	for _, h := range out.Result.Handoffs {
		if h.Tokens == 0 || h.Tokens >= 150 || h.Confidence != 0.7 {
			t.Fatalf("handoff %+v: the short handoff is kept with its count", h)
		}
	}
	got := repairRules(t, out.Result.Repairs)
	for rule, n := range map[string]int{"debate.propose/budget": 3, "debate.propose/type": 3, "debate.review/reference": 3, "debate.review/count": 3} {
		if got[rule] != n {
			t.Errorf("%s repairs %d, want %d: %v", rule, got[rule], n, got)
		}
	}
	// 3 proposers, 3 reviewers, 1 aggregator: no re-ask was needed.
	if n := len(srv.Requests()); n != 7 {
		t.Errorf("%d calls, want 7", n)
	}
	show := invoke(t, env, "runs", "show", out.RunID, "--output-format", "json")
	var saved struct {
		Result struct {
			Repairs json.RawMessage `json:"repairs"`
		} `json:"result"`
	}
	if err := json.Unmarshal([]byte(show.stdout), &saved); err != nil || len(repairRules(t, saved.Result.Repairs)) != 4 {
		t.Fatalf("runs show lacks the repairs: %v %s", err, show.stdout)
	}
	// The text summary line counts them.
	r = invoke(t, env, "debate", "Explain step by step how to design a rate limiter", "--peer-review", "--no-search", "--no-cache")
	if line := regexp.MustCompile(`(?m)^madspark: run .*$`).FindString(r.stderr); r.code != 0 || !strings.Contains(line, "· 12 repairs") || strings.Count(line, "repair") != 1 {
		t.Fatalf("summary line %q: %+v", line, r)
	}
}

// TestDebateChatCompletionsRepairs: through /v1/chat/completions, with and
// without streaming, a complex question asked of an imperfect model gets a
// 200 and its answer, and a stream ends with [DONE]; the repairs are in
// the saved run.
func TestDebateChatCompletionsRepairs(t *testing.T) {
	srv := openaitest.NewServer(t, openaitest.Imperfect(debateWire, debateFlaws))
	env := map[string]string{
		"OPENAI_BASE_URL": srv.URL, "OPENAI_API_KEY": "sk-test", "MADSPARK_MODEL": "small-3b",
		"MADSPARK_DB": filepath.Join(t.TempDir(), "m.db"),
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var errb syncBuffer
	done := make(chan int)
	go func() {
		done <- run(ctx, []string{"serve", "--addr", "127.0.0.1:0", "--no-worker", "--peer-review", "--no-search"}, func(k string) string { return env[k] }, strings.NewReader(""), io.Discard, &errb)
	}()
	addr := regexp.MustCompile(`serving http://([0-9.:]+)/v1`)
	var base string
	for deadline := time.Now().Add(10 * time.Second); base == ""; time.Sleep(10 * time.Millisecond) {
		if m := addr.FindStringSubmatch(errb.String()); m != nil {
			base = "http://" + m[1] + "/v1"
		}
		if time.Now().After(deadline) {
			t.Fatalf("server did not start: %s", errb.String())
		}
	}
	ask := func(stream bool) *http.Response {
		body := fmt.Sprintf(`{"model":"madspark-debate","stream":%v,"messages":[{"role":"user","content":"Explain step by step how to design a rate limiter"}]}`, stream)
		resp, err := http.Post(base+"/chat/completions", "application/json", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		return resp
	}
	var runIDs []string

	resp := ask(false)
	var c struct {
		Choices []struct {
			Message struct{ Content string } `json:"message"`
		} `json:"choices"`
		Madspark struct {
			RunID string `json:"run_id"`
		} `json:"madspark"`
	}
	err := json.NewDecoder(resp.Body).Decode(&c)
	resp.Body.Close()
	if resp.StatusCode != 200 || err != nil || len(c.Choices) != 1 || !strings.HasPrefix(c.Choices[0].Message.Content, "Use a token bucket") {
		t.Fatalf("non-stream: %d %v %+v", resp.StatusCode, err, c)
	}
	runIDs = append(runIDs, c.Madspark.RunID)

	resp = ask(true)
	var data []string
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		if d, ok := strings.CutPrefix(sc.Text(), "data: "); ok {
			data = append(data, d)
		}
	}
	resp.Body.Close()
	if resp.StatusCode != 200 || len(data) < 3 || data[len(data)-1] != "[DONE]" {
		t.Fatalf("stream: %d %q", resp.StatusCode, data)
	}
	var text strings.Builder
	for _, d := range data[:len(data)-1] {
		if strings.Contains(d, `"error"`) {
			t.Fatalf("stream error event: %s", d)
		}
		var ch struct {
			Choices []struct {
				Delta struct{ Content string } `json:"delta"`
			} `json:"choices"`
		}
		if err := json.Unmarshal([]byte(d), &ch); err == nil && len(ch.Choices) > 0 {
			text.WriteString(ch.Choices[0].Delta.Content)
		}
	}
	if !strings.HasPrefix(text.String(), "Use a token bucket") {
		t.Fatalf("streamed answer %q", text.String())
	}
	cancel()
	if code := <-done; code != 0 {
		t.Fatalf("serve exit %d: %s", code, errb.String())
	}

	list := invoke(t, env, "runs", "list", "--pipeline", "debate", "--output-format", "json")
	var runs []struct {
		ID     string `json:"run_id"`
		Status string `json:"status"`
	}
	if err := json.Unmarshal([]byte(list.stdout), &runs); err != nil || len(runs) != 2 {
		t.Fatalf("runs: %v %s", err, list.stdout)
	}
	for _, r := range runs {
		if r.Status != "succeeded" {
			t.Fatalf("run %+v", r)
		}
		show := invoke(t, env, "runs", "show", r.ID, "--output-format", "json")
		var saved struct {
			Result struct {
				Repairs json.RawMessage `json:"repairs"`
			} `json:"result"`
		}
		if err := json.Unmarshal([]byte(show.stdout), &saved); err != nil {
			t.Fatalf("runs show: %v %s", err, show.stdout)
		}
		if got := repairRules(t, saved.Result.Repairs); got["debate.propose/budget"] != 3 || got["debate.review/reference"] != 3 {
			t.Fatalf("run %s repairs %v", r.ID, got)
		}
	}
	if runIDs[0] == "" {
		t.Fatal("no run ID in the completion")
	}
}
