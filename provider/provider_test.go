package provider

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/madspark/madspark/llm"
)

func env(kv ...string) func(string) string {
	m := map[string]string{}
	for i := 0; i+1 < len(kv); i += 2 {
		m[kv[i]] = kv[i+1]
	}
	return func(k string) string { return m[k] }
}

func TestChoose(t *testing.T) {
	tests := []struct {
		name             string
		env              func(string) string
		want, wantModel  string
		mock, local      bool
		wantErrSubstring string
	}{
		{"nothing set is mock", env(), "mock", "mock-1", true, true, ""},
		{"mode mock wins", env("MADSPARK_MODE", "mock", "GOOGLE_API_KEY", "k"), "mock", "mock-1", true, true, ""},
		{"gemini by key", env("GOOGLE_API_KEY", "k"), "gemini", "gemini-2.5-flash", false, false, ""},
		{"gemini model", env("GEMINI_API_KEY", "k", "GOOGLE_GENAI_MODEL", "gemini-2.5-pro"), "gemini", "gemini-2.5-pro", false, false, ""},
		{"anthropic", env("ANTHROPIC_API_KEY", "k"), "anthropic", "claude-sonnet-4-6", false, false, ""},
		{"openai", env("OPENAI_API_KEY", "k", "MADSPARK_MODEL", "gpt-4.1"), "openai", "gpt-4.1", false, false, ""},
		{"local llama-server", env("OPENAI_BASE_URL", "http://127.0.0.1:8081/v1"), "openai", "gpt-4o-mini", false, true, ""},
		{"ollama", env("OLLAMA_HOST", "127.0.0.1:11434"), "ollama", "llama3.2", false, true, ""},
		{"override", env("MADSPARK_PROVIDER", "openai", "GOOGLE_API_KEY", "k", "OPENAI_API_KEY", "k2"), "openai", "gpt-4o-mini", false, false, ""},
		{"override mock", env("MADSPARK_PROVIDER", "mock", "OPENAI_API_KEY", "k2"), "mock", "mock-1", true, true, ""},
		{"unknown provider", env("MADSPARK_PROVIDER", "cohere"), "", "", false, false, "MADSPARK_PROVIDER must be one of"},
		{"missing key", env("MADSPARK_PROVIDER", "anthropic"), "", "", false, false, "needs ANTHROPIC_API_KEY"},
		{"bad mode", env("MADSPARK_MODE", "test"), "", "", false, false, "MADSPARK_MODE"},
		{"bad mock latency", env("MADSPARK_MOCK_LATENCY", "fast"), "", "", false, false, "MADSPARK_MOCK_LATENCY must be a duration"},
		{"vertex", env("GOOGLE_GENAI_USE_VERTEXAI", "true", "GOOGLE_CLOUD_PROJECT", "p", "GOOGLE_CLOUD_LOCATION", "us-central1"), "gemini", "gemini-2.5-flash", false, false, ""},
		{"vertex region", env("GOOGLE_GENAI_USE_VERTEXAI", "1", "GOOGLE_CLOUD_PROJECT", "p", "GOOGLE_CLOUD_REGION", "us-central1"), "gemini", "gemini-2.5-flash", false, false, ""},
		{"vertex without project", env("GOOGLE_GENAI_USE_VERTEXAI", "true"), "", "", false, false, "needs GOOGLE_CLOUD_PROJECT and GOOGLE_CLOUD_LOCATION"},
		{"bad structured output", env("OPENAI_API_KEY", "k", "MADSPARK_STRUCTURED_OUTPUT", "grammar"), "", "", false, false, "MADSPARK_STRUCTURED_OUTPUT must be"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			info, err := FromEnv(tt.env).Choose()
			if tt.wantErrSubstring != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErrSubstring) {
					t.Fatalf("err = %v, want %q", err, tt.wantErrSubstring)
				}
				return
			}
			if err != nil || info.Name != tt.want || info.Model != tt.wantModel || info.Mock != tt.mock || info.Local != tt.local {
				t.Fatalf("Choose = %+v, %v", info, err)
			}
		})
	}
}

func TestOllamaBaseURL(t *testing.T) {
	for in, want := range map[string]string{
		"":                        "http://127.0.0.1:11434/v1",
		"0.0.0.0":                 "http://0.0.0.0:11434/v1",
		"gpu-box:9999":            "http://gpu-box:9999/v1",
		"https://ollama.example/": "https://ollama.example:11434/v1",
	} {
		if got, err := ollamaBaseURL(in); err != nil || got != want {
			t.Errorf("ollamaBaseURL(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
}

func TestRouter(t *testing.T) {
	calls := map[string]int{}
	named := func(name string) llm.Client {
		return llm.ClientFunc(func(context.Context, *llm.Request) (*llm.Response, error) {
			calls[name]++
			return &llm.Response{Provider: name}, nil
		})
	}
	opened := 0
	r := NewRouter(named("openai"), "openai", func(_ context.Context, name string) (llm.Client, error) {
		opened++
		if name == "nope" {
			return nil, errors.New("no such provider")
		}
		return named(name), nil
	})
	ctx := context.Background()
	for _, p := range []string{"", "openai", "gemini", "gemini"} {
		if _, err := r.Generate(ctx, &llm.Request{Provider: p}); err != nil {
			t.Fatal(err)
		}
	}
	if calls["openai"] != 2 || calls["gemini"] != 2 || opened != 1 {
		t.Fatalf("calls %v, opened %d", calls, opened)
	}
	var le *llm.Error
	if _, err := r.Generate(ctx, &llm.Request{Provider: "nope"}); !errors.As(err, &le) || le.Provider != "nope" {
		t.Fatalf("err = %v", err)
	}
	if _, err := OpenNamed(ctx, Settings{}, "cohere", nil); err == nil {
		t.Fatal("unknown provider opened")
	}
	if c, err := OpenNamed(ctx, Settings{Mode: "mock"}, "anthropic", nil); err != nil || c == nil {
		t.Fatalf("mock mode should open the mock for any name: %v", err)
	}
}

func TestLocal(t *testing.T) {
	local := Settings{OpenAIBaseURL: "http://10.0.0.7:4000/v1"}
	remote := Settings{OpenAIBaseURL: "https://gateway.example.com/v1"}
	for _, tc := range []struct {
		s    Settings
		name string
		want bool
	}{
		{local, "openai", true}, {remote, "openai", false}, {Settings{}, "openai", false},
		{remote, "ollama", true}, {remote, "mock", true}, {local, "gemini", false}, {local, "anthropic", false},
	} {
		if got := tc.s.Local(tc.name); got != tc.want {
			t.Errorf("%s at %q: Local = %v, want %v", tc.name, tc.s.OpenAIBaseURL, got, tc.want)
		}
	}
}

// TestCheck: each provider's refusals come before any call, by name; an
// OpenAI-compatible server and the mock take every setting.
func TestCheck(t *testing.T) {
	seed := int64(1)
	req := &llm.Request{Seed: &seed, ReasoningEffort: "xhigh", Verbosity: "low"}
	for name, param := range map[string]string{"anthropic": "seed", "gemini": "verbosity", "openai": "", "ollama": "", "mock": ""} {
		err := Check(name, req)
		le, _ := err.(*llm.Error)
		if (param == "" && err != nil) || (param != "" && (le == nil || le.Param != param)) {
			t.Errorf("%s: %v, want param %q", name, err, param)
		}
	}
	if err := Check("gemini", &llm.Request{ReasoningEffort: "max"}); err == nil || err.(*llm.Error).Param != "reasoning_effort" {
		t.Errorf("gemini, max: %v", err)
	}
}
