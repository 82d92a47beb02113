package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	sdk "github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
)

// checkingModel is a fakeModel with checks of its own (Checker).
type checkingModel struct {
	*fakeModel
	checks atomic.Int32
	err    error
}

func (m *checkingModel) Check(ctx context.Context, p Prompt) error {
	m.checks.Add(1)
	return m.err
}

// admitted is a Config.Admit that counts the requests it was asked for.
func admitted(n *atomic.Int32) func(ctx context.Context) (context.Context, func(), error) {
	return func(ctx context.Context) (context.Context, func(), error) {
		n.Add(1)
		return ctx, func() {}, nil
	}
}

// TestSchemaRefusedBeforeAdmission: a client's schema that points outside
// itself, or is too deep, is a 400 naming the reference (or the limit) and
// where it is in the request, on both APIs, streamed or not, in
// milliseconds, before the request is admitted or its model runs.
func TestSchemaRefusedBeforeAdmission(t *testing.T) {
	m := newFake("madspark-direct", "x")
	var admits atomic.Int32
	s, err := New(Config{Models: []Model{m}, Admit: admitted(&admits)})
	if err != nil {
		t.Fatal(err)
	}
	ts := newHTTPServer(t, s)
	deep := `{"type":"object","properties":{"a":` + strings.Repeat(`{"type":"array","items":`, 4000) + `{}` + strings.Repeat(`}`, 4000) + `}}`
	for _, tc := range []struct{ schema, want string }{
		{`{"type":"object","properties":{"a":{"$ref":"file:///etc/passwd"}}}`, `"file:///etc/passwd"`},
		{`{"type":"object","properties":{"a":{"type":"string"}},"not":{"$ref":"file:///dev/stdin"}}`, `"file:///dev/stdin"`},
		{`{"$schema":"http://127.0.0.1:1/meta","type":"object"}`, `"http://127.0.0.1:1/meta"`},
		{`{"type":"object","properties":{"a":{"$dynamicRef":"https://example.com/x.json"}}}`, `"https://example.com/x.json"`},
		{deep, "nests deeper than 64 levels"},
	} {
		for _, stream := range []bool{false, true} {
			for _, api := range []struct{ path, body, param string }{
				{"/v1/chat/completions", `{"model":"madspark-direct","stream":%v,"messages":[{"role":"user","content":"hi"}],"response_format":{"type":"json_schema","json_schema":{"name":"a","schema":%s}}}`, "response_format.json_schema.schema"},
				{"/v1/responses", `{"model":"madspark-direct","stream":%v,"input":"hi","text":{"format":{"type":"json_schema","name":"a","schema":%s}}}`, "text.format.schema"},
			} {
				start := time.Now()
				resp, body := do(t, http.MethodPost, ts+api.path, "", fmt.Sprintf(api.body, stream, tc.schema))
				took := time.Since(start)
				e, _ := jsonMap(t, body)["error"].(map[string]any)
				if resp.StatusCode != 400 || e["param"] != api.param || !strings.Contains(fmt.Sprint(e["message"]), tc.want) {
					t.Errorf("%s (stream %v) %.60s: %d %s", api.path, stream, tc.schema, resp.StatusCode, body)
				}
				if took > 2*time.Second {
					t.Errorf("%s %.60s: refused after %s", api.path, tc.schema, took)
				}
			}
		}
	}
	if n := admits.Load(); n != 0 {
		t.Errorf("%d refused requests were admitted", n)
	}
	if n := m.callCount(); n != 0 {
		t.Errorf("the model ran %d times", n)
	}
}

// TestModelChecksBeforeAdmission: a model's own checks (Checker) run
// before admission; what they refuse is never admitted, what they accept
// is.
func TestModelChecksBeforeAdmission(t *testing.T) {
	m := &checkingModel{fakeModel: newFake("madspark-debate", "ok"), err: InvalidRequest(errors.New("format.schema: the schema is too complex"))}
	var admits atomic.Int32
	s, err := New(Config{Models: []Model{m}, Admit: admitted(&admits)})
	if err != nil {
		t.Fatal(err)
	}
	ts := newHTTPServer(t, s)
	resp, body := post(t, ts, "", `{"model":"madspark-debate","messages":[{"role":"user","content":"hi"}]}`)
	if resp.StatusCode != 400 || !strings.Contains(body, "too complex") || admits.Load() != 0 || m.callCount() != 0 {
		t.Errorf("refused by its check: %d %s; admitted %d, ran %d", resp.StatusCode, body, admits.Load(), m.callCount())
	}
	m.err = nil
	resp, body = post(t, ts, "", `{"model":"madspark-debate","messages":[{"role":"user","content":"hi"}]}`)
	if resp.StatusCode != 200 || admits.Load() != 1 || m.callCount() != 1 || m.checks.Load() != 2 {
		t.Errorf("accepted by its check: %d %s; admitted %d, ran %d, checked %d", resp.StatusCode, body, admits.Load(), m.callCount(), m.checks.Load())
	}
}

// TestPromptBudget: the limit counts the instructions and every message,
// history included, on both APIs; beyond it the request is a 400
// context_length_exceeded naming the limit, before admission, as the
// official client sees it.
func TestPromptBudget(t *testing.T) {
	m := newFake("madspark-direct", "ok")
	var admits atomic.Int32
	s, err := New(Config{Models: []Model{m}, Admit: admitted(&admits), MaxPromptBytes: 10000})
	if err != nil {
		t.Fatal(err)
	}
	ts := newHTTPServer(t, s)
	client := sdk.NewClient(option.WithBaseURL(ts+"/v1"), option.WithAPIKey("x"), option.WithMaxRetries(0))
	turns := func(n, size int) []sdk.ChatCompletionMessageParamUnion {
		var out []sdk.ChatCompletionMessageParamUnion
		for i := range n {
			if i%2 == 0 {
				out = append(out, sdk.UserMessage(strings.Repeat("u", size)))
			} else {
				out = append(out, sdk.AssistantMessage(strings.Repeat("a", size)))
			}
		}
		return append(out, sdk.UserMessage("and now?"))
	}
	for _, tc := range []struct {
		name string
		msgs []sdk.ChatCompletionMessageParamUnion
		ok   bool
	}{
		{"short history", turns(4, 2000), true},
		{"long history", turns(6, 2000), false},
		{"instructions", append([]sdk.ChatCompletionMessageParamUnion{sdk.SystemMessage(strings.Repeat("s", 9000))}, turns(1, 2000)...), false},
	} {
		_, err := client.Chat.Completions.New(context.Background(), sdk.ChatCompletionNewParams{Model: "madspark-direct", Messages: tc.msgs})
		if tc.ok {
			if err != nil {
				t.Errorf("%s: %v", tc.name, err)
			}
			continue
		}
		var apiErr *sdk.Error
		if !errors.As(err, &apiErr) || apiErr.StatusCode != 400 || apiErr.Code != "context_length_exceeded" || apiErr.Param != "messages" ||
			!strings.Contains(apiErr.Message, "limit is 10000 bytes") {
			t.Errorf("%s: %v", tc.name, err)
		}
	}
	// Responses: the input items, history included.
	items, _ := json.Marshal([]map[string]string{{"role": "user", "content": strings.Repeat("u", 6000)}, {"role": "assistant", "content": strings.Repeat("a", 6000)}, {"role": "user", "content": "and now?"}})
	resp, body := do(t, http.MethodPost, ts+"/v1/responses", "", `{"model":"madspark-direct","input":`+string(items)+`}`)
	e, _ := jsonMap(t, body)["error"].(map[string]any)
	if resp.StatusCode != 400 || e["code"] != "context_length_exceeded" || e["param"] != "input" {
		t.Errorf("responses over the limit: %d %s", resp.StatusCode, body)
	}
	if admits.Load() != 1 || m.callCount() != 1 {
		t.Errorf("admitted %d, ran %d; want the one request within the limit", admits.Load(), m.callCount())
	}
}
