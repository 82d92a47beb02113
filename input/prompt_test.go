package input

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
)

func TestTextBytes(t *testing.T) {
	type msg struct {
		Role, Content string
	}
	type params struct {
		Query   string          `json:"query"`
		History []msg           `json:"history"`
		Opts    map[string]any  `json:"opts"`
		Raw     json.RawMessage `json:"raw"`
		Secret  string          `json:"-"`
		Next    *params         `json:"next"`
		hidden  string
	}
	p := &params{Query: "abc", History: []msg{{"user", "hello"}, {"assistant", "hi"}}, Opts: map[string]any{"key-not-counted": "xy", "n": 3},
		Raw: json.RawMessage(`"not counted"`), Secret: "not counted", Next: &params{Query: "é"}, hidden: "not counted"}
	// abc + user hello + assistant hi + xy + é (2 bytes)
	if got, want := TextBytes(p), 3+4+5+9+2+2+2; got != want {
		t.Errorf("TextBytes = %d, want %d", got, want)
	}
	var decoded any
	_ = json.Unmarshal([]byte(`{"query":"abcd","history":[{"role":"user","content":"12345"}]}`), &decoded)
	if got := TextBytes(decoded); got != 4+4+5 {
		t.Errorf("TextBytes of decoded JSON = %d, want 13", got)
	}
}

func TestCheckPrompt(t *testing.T) {
	if err := CheckPrompt(DefaultMaxPromptBytes, 0); err != nil {
		t.Errorf("at the default limit: %v", err)
	}
	err := CheckPrompt(DefaultMaxPromptBytes+1, 0)
	var pe *PromptError
	if !errors.As(err, &pe) || pe.Limit != DefaultMaxPromptBytes || !strings.Contains(err.Error(), "MADSPARK_MAX_PROMPT_BYTES") {
		t.Errorf("over the default limit: %v", err)
	}
	if err := CheckPrompt(11, 10); err == nil || !strings.Contains(err.Error(), "11 bytes") || !strings.Contains(err.Error(), "limit is 10 bytes") {
		t.Errorf("over a limit of 10: %v", err)
	}
}
