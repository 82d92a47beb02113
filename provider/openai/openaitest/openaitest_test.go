package openaitest

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
)

func post(t *testing.T, s *Server, path, body string) (*http.Response, string) {
	t.Helper()
	resp, err := s.Client().Post(s.URL+path, "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp, string(b)
}

func TestStreamWireFormat(t *testing.T) {
	s := NewServer(t, func(req *ChatRequest) Reply {
		return Reply{Content: "one two", PromptTokens: 5, CompletionTokens: 2}
	})
	resp, body := post(t, s, "/chat/completions",
		`{"model":"m","messages":[{"role":"system","content":"sys"},{"role":"user","content":[{"type":"text","text":"hi"}]}],"stream":true,"stream_options":{"include_usage":true}}`)
	if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "text/event-stream") {
		t.Errorf("Content-Type = %q", ct)
	}
	events := strings.Split(strings.TrimSuffix(body, "\n\n"), "\n\n")
	// role, "one ", "two", finish, usage, [DONE]
	if len(events) != 6 || events[5] != "data: [DONE]" {
		t.Fatalf("events = %q", events)
	}
	var last struct {
		Choices []any `json:"choices"`
		Usage   struct {
			TotalTokens int `json:"total_tokens"`
		} `json:"usage"`
	}
	if err := json.Unmarshal([]byte(strings.TrimPrefix(events[4], "data: ")), &last); err != nil {
		t.Fatal(err)
	}
	if len(last.Choices) != 0 || last.Usage.TotalTokens != 7 {
		t.Errorf("usage chunk = %s", events[4])
	}
	req := s.Requests()[0]
	if req.System() != "sys" || req.Prompt() != "hi" || !req.Stream {
		t.Errorf("recorded %+v", req)
	}
}

func TestUnknownPath(t *testing.T) {
	s := NewServer(t, nil)
	resp, body := post(t, s, "/completions", `{}`)
	if resp.StatusCode != http.StatusNotFound || !strings.Contains(body, `"error"`) {
		t.Errorf("%d %s", resp.StatusCode, body)
	}
	if len(s.Requests()) != 0 {
		t.Error("request to an unknown path recorded")
	}
}

func TestSplitWords(t *testing.T) {
	got := splitWords(" a  bc\nd ")
	if strings.Join(got, "|") != " a  |bc\n|d " {
		t.Errorf("splitWords = %q", got)
	}
}

func TestServedCountsWhatWasAnswered(t *testing.T) {
	s := NewServer(t, func(req *ChatRequest) Reply {
		return Reply{Content: "ok", PromptTokens: 5, CompletionTokens: 2}
	})
	s.Inject(Fault{Status: 500}, Fault{TruncateStreamAfter: 1})
	body := `{"model":"m","messages":[{"role":"user","content":"hi"}]}`
	post(t, s, "/chat/completions", body) // 500
	if resp, err := s.Client().Post(s.URL+"/chat/completions", "application/json", strings.NewReader(body)); err == nil {
		_, _ = io.ReadAll(resp.Body) // cut short: not served whole
		resp.Body.Close()
	}
	post(t, s, "/chat/completions", body)
	post(t, s, "/chat/completions", `{"model":"m","messages":[{"role":"user","content":"hi"}],"stream":true}`)
	if got, want := s.Served(), (Count{Answered: 3, PromptTokens: 10, CompletionTokens: 4}); got != want {
		t.Errorf("Served = %+v, want %+v", got, want)
	}
}
