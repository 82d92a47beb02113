package server

import (
	"bytes"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/madspark/madspark/input"
)

// FuzzDecodeChat checks that decoding any chat completions body never
// panics, that a refused body gets a client error with a one-line
// message, and that an accepted one is a prompt for a served model whose
// text input.Text accepts: valid UTF-8, no NUL, no escape sequence for a
// terminal.
func FuzzDecodeChat(f *testing.F) {
	for _, s := range []string{
		`{"model":"m","messages":[{"role":"user","content":"hi"}]}`,
		`{"model":"m","messages":[{"role":"system","content":"be brief"},{"role":"user","content":[{"type":"text","text":"a"},{"type":"text","text":"b"}]}],"stream":true,"stream_options":{"include_usage":true}}`,
		`{"model":"m","messages":[{"role":"user","content":"a\u0000b"}]}`,
		`{"model":"m","messages":[{"role":"user","content":"caf` + "\xff" + `"}]}`,
		`{"model":"m","messages":[{"role":"user","content":"title\u001b]0;pwned\u0007 \u001b[2J"}]}`,
		`{"model":"m","messages":[{"role":"system","content":"fake\rline"},{"role":"user","content":"x"}]}`,
		`{"model":"m","messages":[],"temperature":3}`,
		`{"model":"m","messages":[{"role":"user","content":"w?"},{"role":"assistant","content":null,"tool_calls":[{"id":"c1","type":"function","function":{"name":"f","arguments":"{\"a\":1}"}}]},{"role":"tool","tool_call_id":"c1","content":"x"}],"tools":[{"type":"function","function":{"name":"f","parameters":{"type":"object"}}}],"tool_choice":"auto"}`,
		`{"model":"m"} {}`,
		`[`,
	} {
		f.Add([]byte(s))
	}
	s, err := New(Config{Models: []Model{newFake("m")}, MaxBodyBytes: 1 << 16})
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		w := &captureWriter{header: map[string][]string{}}
		r := newRequest(body)
		x, m, err := s.read(w, r, s.decodeChat)
		if err != nil {
			status, we := classify(err)
			if status < 400 || status >= 500 || strings.Contains(we.Message, "\n") {
				t.Fatalf("body %q: %d %q", body, status, we.Message)
			}
			return
		}
		if m == nil || m.ID() != "m" {
			t.Fatalf("body %q: no model", body)
		}
		p := x.prompt
		for _, msg := range p.Messages {
			if !utf8.ValidString(msg.Content) || input.Text("content", msg.Content) != nil {
				t.Fatalf("body %q: accepted content %q", body, msg.Content)
			}
			for _, c := range msg.ToolCalls {
				if input.Text("arguments", c.Arguments) != nil || input.Text("id", c.ID) != nil {
					t.Fatalf("body %q: accepted call %+v", body, c)
				}
			}
		}
		if err := input.Text("system", p.System); err != nil {
			t.Fatalf("body %q: accepted %v", body, err)
		}
	})
}

func newRequest(body []byte) *http.Request {
	return httptest.NewRequest(http.MethodPost, "http://localhost/v1/chat/completions", bytes.NewReader(body))
}

// FuzzDecodeResponses checks the same of Responses bodies.
func FuzzDecodeResponses(f *testing.F) {
	for _, s := range []string{
		`{"model":"m","input":"hi"}`,
		`{"model":"m","instructions":"be brief","input":[{"role":"developer","content":"x"},{"type":"message","role":"user","content":[{"type":"input_text","text":"a"}]}],"stream":true}`,
		`{"model":"m","input":"hi","text":{"format":{"type":"json_schema","name":"x","schema":{"type":"object"},"strict":true}},"max_output_tokens":5}`,
		`{"model":"m","input":[{"role":"assistant","content":[{"type":"output_text","text":"a","annotations":[]}],"id":"msg_1","status":"completed"}]}`,
		`{"model":"m","input":[1]}`,
		`{"model":"m","input":[{"role":"user","content":"w?"},{"type":"function_call","call_id":"c1","name":"f","arguments":"{}"},{"type":"function_call_output","call_id":"c1","output":"x"}],"tools":[{"type":"function","name":"f"}]}`,
		`{"model":"m","input":"a\u0000b"}`,
	} {
		f.Add([]byte(s))
	}
	s, err := New(Config{Models: []Model{newFake("m")}, MaxBodyBytes: 1 << 16})
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		w := &captureWriter{header: map[string][]string{}}
		r := httptest.NewRequest(http.MethodPost, "http://localhost/v1/responses", bytes.NewReader(body))
		x, m, err := s.read(w, r, s.decodeResponses)
		if err != nil {
			status, we := classify(err)
			if status < 400 || status >= 500 || strings.Contains(we.Message, "\n") {
				t.Fatalf("body %q: %d %q", body, status, we.Message)
			}
			return
		}
		p := x.prompt
		if m == nil || m.ID() != "m" || strings.IndexByte(p.System, 0) >= 0 {
			t.Fatalf("body %q: model %v, system %q", body, m, p.System)
		}
		for _, msg := range p.Messages {
			if !utf8.ValidString(msg.Content) || strings.IndexByte(msg.Content, 0) >= 0 {
				t.Fatalf("body %q: accepted content %q", body, msg.Content)
			}
		}
	})
}
