package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	sdk "github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/responses"

	"github.com/madspark/madspark/llm"
	"github.com/madspark/madspark/middleware"
)

// TestChatSettingsReachTheModel: a chat's system and developer messages
// and every sampling setting reach the model's prompt as sent.
func TestChatSettingsReachTheModel(t *testing.T) {
	m := newFake("madspark-direct", "x")
	srv := newTestServer(t, "", m)
	body := `{"model":"madspark-direct","messages":[{"role":"system","content":"Answer like a pirate."},{"role":"user","content":"hi"},` +
		`{"role":"developer","content":"At most five words."},{"role":"user","content":"What is Rust?"}],` +
		`"temperature":1.7,"top_p":0.3,"max_tokens":9,"max_completion_tokens":5,"stop":"END","seed":42,` +
		`"response_format":{"type":"json_schema","json_schema":{"name":"answer","description":"the answer","strict":true,` +
		`"schema":{"type":"object","properties":{"text":{"type":"string"}},"required":["text"],"additionalProperties":false}}}}`
	if resp, b := post(t, srv.URL, "", body); resp.StatusCode != 200 {
		t.Fatalf("%d %s", resp.StatusCode, b)
	}
	p := m.lastPrompt()
	if p.System != "Answer like a pirate.\n\nAt most five words." || p.Query() != "What is Rust?" || len(p.Messages) != 2 {
		t.Errorf("messages: system %q, %+v", p.System, p.Messages)
	}
	if *p.Temperature != 1.7 || *p.TopP != 0.3 || p.MaxTokens != 5 || fmt.Sprint(p.Stop) != "[END]" || *p.Seed != 42 {
		t.Errorf("settings: temperature %v, top_p %v, max tokens %d, stop %q, seed %v", *p.Temperature, *p.TopP, p.MaxTokens, p.Stop, *p.Seed)
	}
	var schema map[string]any
	if f := p.Format; f == nil || f.Name != "answer" || !f.Strict || json.Unmarshal(f.Schema, &schema) != nil || schema["description"] != "the answer" || schema["required"] == nil {
		t.Errorf("format %+v", p.Format)
	}

	// JSON mode is a format with no schema; text is none.
	for _, tc := range []struct {
		format string
		want   *Format
	}{{`{"type":"json_object"}`, &Format{}}, {`{"type":"text"}`, nil}} {
		body := `{"model":"madspark-direct","messages":[{"role":"user","content":"hi"}],"response_format":` + tc.format + `}`
		if resp, b := post(t, srv.URL, "", body); resp.StatusCode != 200 {
			t.Fatalf("%s: %d %s", tc.format, resp.StatusCode, b)
		}
		if got := m.lastPrompt().Format; fmt.Sprint(got) != fmt.Sprint(tc.want) {
			t.Errorf("%s: format %+v, want %+v", tc.format, got, tc.want)
		}
	}
}

// fixedModel applies only some settings.
type fixedModel struct {
	*fakeModel
	takes Setting
}

func (f fixedModel) Settings() Setting { return f.takes }

// TestSettingsAModelCannotApply: a setting the model does not apply is a
// 400 naming the field as the client sent it, on both APIs, before the
// model runs; settings it applies pass.
func TestSettingsAModelCannotApply(t *testing.T) {
	none := fixedModel{newFake("madspark-spark", "x"), 0}
	some := fixedModel{newFake("partial", "x"), SettingTemperature | SettingSystem}
	srv := newTestServer(t, "", none, some)
	const user = `"messages":[{"role":"user","content":"hi"}]`
	for _, tc := range []struct{ extra, param string }{
		{`"messages":[{"role":"user","content":"hi"},{"role":"developer","content":"be brief"}]`, "messages[1]"},
		{user + `,"temperature":0.2`, "temperature"},
		{user + `,"top_p":0.5`, "top_p"},
		{user + `,"max_tokens":10`, "max_tokens"},
		{user + `,"max_completion_tokens":10`, "max_completion_tokens"},
		{user + `,"stop":["x"]`, "stop"},
		{user + `,"seed":1`, "seed"},
		{user + `,"response_format":{"type":"json_object"}`, "response_format"},
	} {
		resp, body := post(t, srv.URL, "", `{"model":"madspark-spark",`+tc.extra+`}`)
		e, _ := jsonMap(t, body)["error"].(map[string]any)
		if resp.StatusCode != 400 || e["param"] != tc.param || !strings.Contains(e["message"].(string), "madspark-spark") {
			t.Errorf("%s: %d %s", tc.param, resp.StatusCode, body)
		}
	}
	for _, tc := range []struct{ body, param string }{
		{`"input":"hi","instructions":"be brief"`, "instructions"},
		{`"input":[{"role":"system","content":"be brief"},{"role":"user","content":"hi"}]`, "input[0]"},
		{`"input":"hi","max_output_tokens":16`, "max_output_tokens"},
		{`"input":"hi","text":{"format":{"type":"json_schema","name":"x","schema":{"type":"object"}}}`, "text.format"},
	} {
		resp, body := do(t, http.MethodPost, srv.URL+"/v1/responses", "", `{"model":"madspark-spark",`+tc.body+`}`)
		e, _ := jsonMap(t, body)["error"].(map[string]any)
		if resp.StatusCode != 400 || e["param"] != tc.param {
			t.Errorf("responses %s: %d %s", tc.param, resp.StatusCode, body)
		}
	}
	if n := none.callCount(); n != 0 {
		t.Errorf("the model ran %d times for settings it cannot apply", n)
	}
	// Those it applies pass; one it does not is named.
	if resp, b := post(t, srv.URL, "", `{"model":"partial","messages":[{"role":"system","content":"s"},{"role":"user","content":"hi"}],"temperature":0.1}`); resp.StatusCode != 200 {
		t.Errorf("applied settings refused: %d %s", resp.StatusCode, b)
	}
	if resp, b := post(t, srv.URL, "", `{"model":"partial",`+user+`,"temperature":0.1,"seed":3}`); resp.StatusCode != 400 || !strings.Contains(b, `"param":"seed"`) {
		t.Errorf("seed: %d %s", resp.StatusCode, b)
	}
}

// TestUnknownV1Paths: a path of /v1 with no route is a 404 in OpenAI's
// error shape for every method, also with the web UI's catch-all mounted.
func TestUnknownV1Paths(t *testing.T) {
	srv := newTestServer(t, "", newFake("madspark-debate"))
	srv.s.Mux().HandleFunc("GET /", func(w http.ResponseWriter, _ *http.Request) { w.Write([]byte("ui")) })
	for _, method := range []string{http.MethodGet, http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete} {
		for _, path := range []string{"/v1/embeddings", "/v1/responses/resp_1", "/v1", "/v1/chat/completions/x"} {
			body := ""
			if method != http.MethodGet && method != http.MethodDelete {
				body = `{}`
			}
			resp, b := do(t, method, srv.URL+path, "", body)
			e, _ := jsonMap(t, b)["error"].(map[string]any)
			if resp.StatusCode != 404 || e["code"] != "unknown_url" || e["type"] != "invalid_request_error" || !strings.Contains(e["message"].(string), method+" "+path) {
				t.Errorf("%s %s: %d %s", method, path, resp.StatusCode, b)
			}
		}
	}
}

// TestCapacityRefusalBeforeTheStream: a request refused for capacity, at
// admission or by its model before the first text, is a 429 with
// Retry-After and an OpenAI error, streamed or not, on both APIs; a
// refused request does not run its model.
func TestCapacityRefusalBeforeTheStream(t *testing.T) {
	busy := &llm.Error{Provider: "openai", Status: 429, Retryable: true, RetryAfter: 3 * time.Second, Err: middleware.ErrBusy, Message: "4 calls in flight"}
	m := newFake("madspark-direct", "x")
	refuse := true
	s, err := New(Config{Models: []Model{m}, Admit: func(ctx context.Context) (context.Context, func(), error) {
		if refuse {
			return nil, nil, busy
		}
		return ctx, func() {}, nil
	}})
	if err != nil {
		t.Fatal(err)
	}
	ts := newHTTPServer(t, s)
	check := func(what string, resp *http.Response, body string) {
		t.Helper()
		e, _ := jsonMap(t, body)["error"].(map[string]any)
		if resp.StatusCode != 429 || resp.Header.Get("Retry-After") != "3" || resp.Header.Get("Content-Type") != "application/json" ||
			e["type"] != "rate_limit_error" || e["code"] != "rate_limit_exceeded" {
			t.Errorf("%s: %d Retry-After %q %s", what, resp.StatusCode, resp.Header.Get("Retry-After"), body)
		}
	}
	for _, stream := range []bool{false, true} {
		resp, body := post(t, ts, "", fmt.Sprintf(`{"model":"madspark-direct","stream":%v,"messages":[{"role":"user","content":"hi"}]}`, stream))
		check(fmt.Sprint("chat, stream ", stream), resp, body)
		resp, body = do(t, http.MethodPost, ts+"/v1/responses", "", fmt.Sprintf(`{"model":"madspark-direct","stream":%v,"input":"hi"}`, stream))
		check(fmt.Sprint("responses, stream ", stream), resp, body)
	}
	if n := m.callCount(); n != 0 {
		t.Errorf("the model ran %d times for refused requests", n)
	}
	// Admitted, but its model is refused before it writes: still a 429.
	refuse = false
	m.err = busy
	resp, body := post(t, ts, "", `{"model":"madspark-direct","stream":true,"messages":[{"role":"user","content":"hi"}]}`)
	check("the model refused", resp, body)

	// The official client sees a 429 it may retry.
	client := sdk.NewClient(option.WithBaseURL(ts+"/v1"), option.WithAPIKey("x"), option.WithMaxRetries(0))
	stream := client.Chat.Completions.NewStreaming(context.Background(), sdk.ChatCompletionNewParams{Model: "madspark-direct",
		Messages: []sdk.ChatCompletionMessageParamUnion{sdk.UserMessage("hi")}})
	for stream.Next() {
	}
	var apiErr *sdk.Error
	if !errors.As(stream.Err(), &apiErr) || apiErr.StatusCode != 429 {
		t.Errorf("SDK stream: %v", stream.Err())
	}
}

// newHTTPServer serves s with httptest and returns its URL.
func newHTTPServer(t *testing.T, s *Server) string {
	t.Helper()
	ts := httptest.NewServer(s.Handler())
	t.Cleanup(ts.Close)
	return ts.URL
}

// TestCachedTokensInUsage: the prompt tokens of calls the cache answered
// are reported as cached, on both APIs, plain and streamed.
func TestCachedTokensInUsage(t *testing.T) {
	srv := newTestServer(t, "", newFake("madspark-direct", "x"))
	_, body := post(t, srv.URL, "", `{"model":"madspark-direct","messages":[{"role":"user","content":"hi"}]}`)
	var c struct {
		Usage struct {
			PromptTokens        int `json:"prompt_tokens"`
			PromptTokensDetails struct {
				CachedTokens int `json:"cached_tokens"`
			} `json:"prompt_tokens_details"`
		} `json:"usage"`
	}
	if json.Unmarshal([]byte(body), &c) != nil || c.Usage.PromptTokens != 35 || c.Usage.PromptTokensDetails.CachedTokens != fakeUsage.CachedInputTokens {
		t.Errorf("chat usage: %s", body)
	}
	_, body = post(t, srv.URL, "", `{"model":"madspark-direct","stream":true,"stream_options":{"include_usage":true},"messages":[{"role":"user","content":"hi"}]}`)
	if data := sseData(t, body); !strings.Contains(data[len(data)-2], `"prompt_tokens_details":{"cached_tokens":5}`) {
		t.Errorf("streamed usage: %s", data[len(data)-2])
	}
	client := sdk.NewClient(option.WithBaseURL(srv.URL+"/v1"), option.WithAPIKey("x"))
	r, err := client.Responses.New(context.Background(), responses.ResponseNewParams{Model: "madspark-direct",
		Input: responses.ResponseNewParamsInputUnion{OfString: sdk.String("hi")}})
	if err != nil || r.Usage.InputTokens != 35 || r.Usage.InputTokensDetails.CachedTokens != 5 || r.Usage.TotalTokens != 50 {
		t.Errorf("responses usage: %v %+v", err, r.Usage)
	}
}

// TestResponsesAPI drives POST /v1/responses with the official Go SDK:
// plain and streamed, a string input and message items with instructions,
// text.format json_schema, a reply cut off at max_output_tokens, and the
// fields it refuses.
func TestResponsesAPI(t *testing.T) {
	m := newFake("madspark-direct", "Hello", ", ", "world")
	cut := newFake("cut", "Hel")
	cut.finish = "length"
	srv := newTestServer(t, "", m, cut)
	client := sdk.NewClient(option.WithBaseURL(srv.URL+"/v1"), option.WithAPIKey("x"))
	ctx := context.Background()
	params := responses.ResponseNewParams{
		Model:        "madspark-direct",
		Instructions: sdk.String("Be brief."),
		Input: responses.ResponseNewParamsInputUnion{OfInputItemList: responses.ResponseInputParam{
			responses.ResponseInputItemParamOfMessage("Speak English.", responses.EasyInputMessageRoleDeveloper),
			responses.ResponseInputItemParamOfMessage("Hi", responses.EasyInputMessageRoleUser),
			responses.ResponseInputItemParamOfMessage("Hello!", responses.EasyInputMessageRoleAssistant),
			responses.ResponseInputItemParamOfMessage("Say hello", responses.EasyInputMessageRoleUser),
		}},
		Temperature:     sdk.Float(0.2),
		TopP:            sdk.Float(0.9),
		MaxOutputTokens: sdk.Int(64),
		Text: responses.ResponseTextConfigParam{Format: responses.ResponseFormatTextConfigUnionParam{
			OfJSONSchema: &responses.ResponseFormatTextJSONSchemaConfigParam{Name: "greeting", Strict: sdk.Bool(true),
				Schema: map[string]any{"type": "object", "properties": map[string]any{"text": map[string]any{"type": "string"}}, "required": []string{"text"}}},
		}},
	}
	r, err := client.Responses.New(ctx, params)
	if err != nil {
		t.Fatal(err)
	}
	if r.Status != "completed" || r.OutputText() != "Hello, world" || !strings.HasPrefix(r.ID, "resp_") || r.Model != "madspark-direct" ||
		len(r.Output) != 1 || r.Output[0].Role != "assistant" || r.Text.Format.Type != "json_schema" {
		t.Fatalf("response %s", r.RawJSON())
	}
	p := m.lastPrompt()
	if p.System != "Be brief.\n\nSpeak English." || p.Query() != "Say hello" || len(p.Messages) != 3 || *p.Temperature != 0.2 || *p.TopP != 0.9 ||
		p.MaxTokens != 64 || p.Format == nil || p.Format.Name != "greeting" || !p.Format.Strict {
		t.Fatalf("prompt %+v", p)
	}

	// Streamed: the events in their order, the text in deltas.
	stream := client.Responses.NewStreaming(ctx, responses.ResponseNewParams{Model: "madspark-direct",
		Input: responses.ResponseNewParamsInputUnion{OfString: sdk.String("Say hello")}})
	var types []string
	var text strings.Builder
	var final responses.Response
	seq := int64(-1)
	for stream.Next() {
		ev := stream.Current()
		types = append(types, ev.Type)
		if ev.SequenceNumber != seq+1 {
			t.Errorf("event %s has sequence number %d after %d", ev.Type, ev.SequenceNumber, seq)
		}
		seq = ev.SequenceNumber
		switch ev.Type {
		case "response.output_text.delta":
			text.WriteString(ev.Delta)
		case "response.completed":
			final = ev.Response
		}
	}
	if err := stream.Err(); err != nil {
		t.Fatal(err)
	}
	want := "response.created response.in_progress response.output_item.added response.content_part.added " +
		"response.output_text.delta response.output_text.delta response.output_text.delta response.output_text.done " +
		"response.content_part.done response.output_item.done response.completed"
	if strings.Join(types, " ") != want || text.String() != "Hello, world" || final.OutputText() != "Hello, world" || final.Usage.TotalTokens != 50 {
		t.Fatalf("events %v, text %q, final %s", types, text.String(), final.RawJSON())
	}

	// Cut off at the token limit: incomplete, plain and streamed.
	r, err = client.Responses.New(ctx, responses.ResponseNewParams{Model: "cut", MaxOutputTokens: sdk.Int(16),
		Input: responses.ResponseNewParamsInputUnion{OfString: sdk.String("Say hello")}})
	if err != nil || r.Status != "incomplete" || r.IncompleteDetails.Reason != "max_output_tokens" {
		t.Fatalf("cut: %v %s", err, r.RawJSON())
	}
	stream = client.Responses.NewStreaming(ctx, responses.ResponseNewParams{Model: "cut",
		Input: responses.ResponseNewParamsInputUnion{OfString: sdk.String("Say hello")}})
	last := ""
	for stream.Next() {
		last = stream.Current().Type
	}
	if stream.Err() != nil || last != "response.incomplete" {
		t.Fatalf("cut stream ends with %q: %v", last, stream.Err())
	}

	// Refused, with the field named.
	for _, tc := range []struct{ body, param string }{
		{`"input":"hi","previous_response_id":"resp_1"`, "previous_response_id"},
		{`"input":"hi","conversation":"conv_1"`, "conversation"},
		{`"input":"hi","reasoning":{"effort":"low"}`, "reasoning"},
		{`"input":"hi","background":true`, "background"},
		{`"input":[{"type":"function_call_output","call_id":"c","output":"x"}]`, "input[0].call_id"},
		{`"input":[{"role":"user","content":[{"type":"input_image","image_url":"x"}]}]`, "input[0].content"},
		{`"input":[{"role":"tool","content":"x"}]`, "input[0].role"},
		{`"input":[]`, "input"},
		{`"input":[1]`, "input[0]"},
		{`"input":[{"role":"user","content":"hi","extra":1}]`, "input[0].extra"},
		{`"input":"hi","text":{"format":{"type":"json_schema","schema":{"type":"object"}}}`, "text.format.name"},
		{`"input":"hi","temperature":3`, "temperature"},
		{`"input":"hi","max_output_tokens":0`, "max_output_tokens"},
		{`"input":"hi","tools":[{"type":"web_search"}]`, "tools[0].type"},
		{`"input":"hi","tools":[{"type":"function","name":"f","function":{}}]`, "tools[0].function"},
		{`"input":"hi","tools":[{"type":"function","name":"f"}],"tool_choice":{"type":"file_search"}`, "tool_choice.type"},
		{`"input":[{"type":"item_reference","id":"fc_1"}]`, "input[0].type"},
		{`"input":[{"type":"function_call","call_id":"c","name":"f","arguments":"{}","extra":1}]`, "input[0].extra"},
	} {
		resp, body := do(t, http.MethodPost, srv.URL+"/v1/responses", "", `{"model":"madspark-direct",`+tc.body+`}`)
		e, _ := jsonMap(t, body)["error"].(map[string]any)
		if resp.StatusCode != 400 || e["param"] != tc.param || e["type"] != "invalid_request_error" {
			t.Errorf("%s: %d %s", tc.param, resp.StatusCode, body)
		}
	}
	_, err = client.Responses.New(ctx, responses.ResponseNewParams{Model: "madspark-direct", PreviousResponseID: sdk.String("resp_1"),
		Input: responses.ResponseNewParamsInputUnion{OfString: sdk.String("hi")}})
	var apiErr *sdk.Error
	if !errors.As(err, &apiErr) || apiErr.StatusCode != 400 || !strings.Contains(apiErr.Message, "does not store responses") {
		t.Errorf("previous_response_id through the SDK: %v", err)
	}
}

// heldModel writes nothing until released, then its chunks, or fails.
type heldModel struct {
	id      string
	release chan struct{}
	chunks  []string
	err     error
}

func (m *heldModel) ID() string { return m.id }

func (m *heldModel) Complete(ctx context.Context, _ Prompt, out *Stream) (*Completion, error) {
	select {
	case <-m.release:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	if m.err != nil {
		return nil, m.err
	}
	for _, c := range m.chunks {
		out.Text(c)
	}
	return &Completion{Text: strings.Join(m.chunks, "")}, nil
}

// TestStreamKeepAlive: a model slow to its first text gets its stream
// started with comments (the response's headers come before any text),
// which the official client skips; its answer follows, and a failure after
// that ends the stream.
func TestStreamKeepAlive(t *testing.T) {
	slow := &heldModel{id: "slow", release: make(chan struct{}), chunks: []string{"Hel", "lo"}}
	failing := &heldModel{id: "failing", release: make(chan struct{}), err: &llm.Error{Provider: "openai", Message: "upstream gave up"}}
	s, err := New(Config{Models: []Model{slow, failing}, KeepAlive: 10 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	url := newHTTPServer(t, s)
	client := sdk.NewClient(option.WithBaseURL(url+"/v1"), option.WithAPIKey("x"), option.WithMaxRetries(0))
	// NewStreaming returns with the response's headers, sent by the first
	// keep-alive: the model has written nothing yet.
	stream := client.Chat.Completions.NewStreaming(context.Background(), sdk.ChatCompletionNewParams{Model: "slow",
		Messages: []sdk.ChatCompletionMessageParamUnion{sdk.UserMessage("hi")}})
	close(slow.release)
	var text strings.Builder
	for stream.Next() {
		if ch := stream.Current(); len(ch.Choices) > 0 {
			text.WriteString(ch.Choices[0].Delta.Content)
		}
	}
	if stream.Err() != nil || text.String() != "Hello" {
		t.Fatalf("slow model: %q %v", text.String(), stream.Err())
	}

	resp, err := http.Post(url+"/v1/chat/completions", "application/json", strings.NewReader(`{"model":"failing","stream":true,"messages":[{"role":"user","content":"hi"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	close(failing.release)
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 200 || !strings.Contains(string(body), "\n\n: ") || !strings.Contains(string(body), "upstream gave up") || strings.Contains(string(body), "[DONE]") {
		t.Fatalf("failing after the keep-alive: %d %q", resp.StatusCode, body)
	}
}
