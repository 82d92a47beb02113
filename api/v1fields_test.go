package api_test

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/madspark/madspark"
	"github.com/madspark/madspark/llm"
)

// pipelineModels are the pipeline models the harness serves.
var pipelineModels = []string{"madspark-spark", "madspark-chaos", "madspark-assess"}

// v1Request is a request of api ("chat" or "responses") to model: the
// conversation (role and content pairs) and more fields, each as
// chat's and as Responses' name them.
func v1Request(api, model string, conversation [][2]string, chat, responses string) (path, body string) {
	var msgs []string
	for _, m := range conversation {
		b, _ := json.Marshal(map[string]string{"role": m[0], "content": m[1]})
		msgs = append(msgs, string(b))
	}
	if api == "chat" {
		return "/v1/chat/completions", fmt.Sprintf(`{"model":%q,"messages":[%s]%s}`, model, strings.Join(msgs, ","), chat)
	}
	return "/v1/responses", fmt.Sprintf(`{"model":%q,"input":[%s]%s}`, model, strings.Join(msgs, ","), responses)
}

// runOf is the run that answered a 200 of either API.
func runOf(t *testing.T, r resp) string {
	t.Helper()
	var c struct {
		Madspark struct {
			RunID string `json:"run_id"`
		} `json:"madspark"`
	}
	r.json(t, &c)
	if c.Madspark.RunID == "" {
		t.Fatalf("no run: %s", clip(r.body))
	}
	return c.Madspark.RunID
}

// calls are the calls a run journaled.
func (hs *harness) calls(t *testing.T, runID string) []madspark.Call {
	t.Helper()
	steps, err := hs.db.Steps(t.Context(), runID)
	if err != nil {
		t.Fatal(err)
	}
	var out []madspark.Call
	for _, s := range steps {
		out = append(out, s.Calls...)
	}
	if len(out) == 0 {
		t.Fatalf("run %s journaled no call", runID)
	}
	return out
}

// TestPipelineModelFields: on every pipeline model and both APIs, a
// reasoning effort and a verbosity reach every call of the run, the
// client's user and metadata are the run's tags, and what a pipeline
// cannot honour — a bound on built-in tool calls, messages after the last
// user message, tools, a JSON format — is refused naming the field as the
// client sent it, with no run recorded.
func TestPipelineModelFields(t *testing.T) {
	hs := newHarness(t, options{})
	user := [][2]string{{"user", "urban farming"}}
	for _, model := range pipelineModels {
		for _, api := range []string{"chat", "responses"} {
			path, body := v1Request(api, model, user,
				`,"reasoning_effort":"low","verbosity":"high","user":"u-1","metadata":{"team":"roof"},"store":false,"service_tier":"auto"`,
				`,"reasoning":{"effort":"low","summary":"auto"},"text":{"verbosity":"high"},"user":"u-1","metadata":{"team":"roof"},"store":false,"truncation":"disabled"`)
			r := hs.do("POST", path, body)
			if r.status != 200 {
				t.Fatalf("%s %s: %d %s", model, api, r.status, clip(r.body))
			}
			id := runOf(t, r)
			for _, c := range hs.calls(t, id) {
				if c.ReasoningEffort != "low" || c.Verbosity != "high" {
					t.Errorf("%s %s: call of %s: reasoning effort %q, verbosity %q", model, api, c.Agent, c.ReasoningEffort, c.Verbosity)
				}
			}
			if run := hs.run(id); !slices.Equal(run.Tags, []string{"user=u-1", "team=roof"}) {
				t.Errorf("%s %s: tags %q", model, api, run.Tags)
			}

			before := len(hs.runs(t))
			for _, bad := range []struct {
				conversation           [][2]string
				chat, responses, param string
			}{
				{user, ``, `,"max_tool_calls":3`, "max_tool_calls"},
				{[][2]string{{"user", "urban farming"}, {"assistant", "Here are"}}, ``, ``, map[string]string{"chat": "messages[1]", "responses": "input[1]"}[api]},
				{user, `,"tools":[{"type":"function","function":{"name":"f"}}]`, `,"tools":[{"type":"function","name":"f"}]`, "tools"},
				{user, `,"response_format":{"type":"json_object"}`, `,"text":{"format":{"type":"json_object"}}`, map[string]string{"chat": "response_format", "responses": "text.format"}[api]},
				{user, `,"reasoning_effort":"extreme"`, `,"reasoning":{"effort":"extreme"}`, map[string]string{"chat": "reasoning_effort", "responses": "reasoning.effort"}[api]},
				{user, `,"store":true`, `,"store":true`, "store"},
			} {
				if api == "chat" && bad.param == "max_tool_calls" {
					continue // a Responses field
				}
				path, body := v1Request(api, model, bad.conversation, bad.chat, bad.responses)
				r := hs.do("POST", path, body)
				if r.status != 400 || !strings.Contains(string(r.body), `"param":"`+bad.param+`"`) {
					t.Errorf("%s %s %s: %d %s", model, api, bad.param, r.status, clip(r.body))
				}
			}
			if after := len(hs.runs(t)); after != before {
				t.Errorf("%s %s: %d runs recorded for refused requests", model, api, after-before)
			}
		}
	}
}

// runs lists every run.
func (hs *harness) runs(t *testing.T) []madspark.Run {
	t.Helper()
	runs, err := hs.db.Runs(t.Context(), madspark.RunFilter{Limit: 1000})
	if err != nil {
		t.Fatal(err)
	}
	out := make([]madspark.Run, len(runs))
	for i, r := range runs {
		out[i] = *r
	}
	return out
}

// TestPipelineModelChecksTheProvider: a setting the provider cannot take
// (its check, as provider.Check says) is refused before the run starts,
// naming the field as the client sent it; no run is recorded.
func TestPipelineModelChecksTheProvider(t *testing.T) {
	hs := newHarness(t, options{check: func(req *llm.Request) error {
		if req.Verbosity != "" {
			return &llm.Error{Provider: "gemini", Param: "verbosity", Message: "Gemini has no verbosity setting; leave verbosity unset"}
		}
		return nil
	}})
	for _, api := range []string{"chat", "responses"} {
		path, body := v1Request(api, "madspark-spark", [][2]string{{"user", "urban farming"}}, `,"verbosity":"low"`, `,"text":{"verbosity":"low"}`)
		r := hs.do("POST", path, body)
		want := map[string]string{"chat": "verbosity", "responses": "text.verbosity"}[api]
		if r.status != 400 || !strings.Contains(string(r.body), `"param":"`+want+`"`) || !strings.Contains(string(r.body), "Gemini has no verbosity") {
			t.Errorf("%s: %d %s", api, r.status, clip(r.body))
		}
	}
	if runs := hs.runs(t); len(runs) != 0 {
		t.Errorf("%d runs recorded", len(runs))
	}
	path, body := v1Request("chat", "madspark-spark", [][2]string{{"user", "urban farming"}}, `,"reasoning_effort":"high"`, ``)
	if r := hs.do("POST", path, body); r.status != 200 {
		t.Errorf("a setting the provider takes: %d %s", r.status, clip(r.body))
	}
}

// TestPipelineModelConversation: a chat client's follow-up, which sends
// the whole conversation again (Open WebUI, LibreChat), runs the pipeline
// for its last user message, and the messages before it reach every call
// of the run in words, after the agent's own instructions and the
// client's; the run's subject is the follow-up. The Responses API's input
// items do the same.
func TestPipelineModelConversation(t *testing.T) {
	hs := newHarness(t, options{})
	for _, model := range pipelineModels {
		first := hs.do("POST", "/v1/chat/completions", fmt.Sprintf(`{"model":%q,"stream":false,"messages":[{"role":"user","content":"urban farming"}]}`, model))
		var c struct {
			Choices []struct {
				Message struct{ Content string } `json:"message"`
			} `json:"choices"`
		}
		first.json(t, &c)
		if first.status != 200 || len(c.Choices) != 1 {
			t.Fatalf("%s: %d %s", model, first.status, clip(first.body))
		}
		report := c.Choices[0].Message.Content
		conversation := [][2]string{{"system", "Answer in French."}, {"user", "urban farming"}, {"assistant", report}, {"user", "only on balconies"}}
		for _, api := range []string{"chat", "responses"} {
			path, body := v1Request(api, model, conversation, `,"stream":true`, `,"stream":true`)
			r := hs.do("POST", path, body)
			if r.status != 200 || !strings.Contains(string(r.body), "only on balconies") {
				t.Fatalf("%s %s follow-up: %d %s", model, api, r.status, clip(r.body))
			}
			runs := hs.runs(t)
			run := runs[0] // the newest
			if run.Subject != "only on balconies" || "madspark-"+run.Pipeline != model {
				t.Errorf("%s %s: run %s about %q", model, api, run.Pipeline, run.Subject)
			}
			want := "\n--- user ---\nurban farming\n--- assistant ---\n" + report
			for _, call := range hs.calls(t, run.ID) {
				i, j := strings.Index(call.System, "Answer in French."), strings.Index(call.System, "The conversation the person had before asking")
				if i < 0 || j < i || !strings.HasSuffix(call.System, want) {
					t.Errorf("%s %s: call of %s: system …%q", model, api, call.Agent, call.System[max(0, len(call.System)-300):])
					break
				}
			}
		}
	}
}
