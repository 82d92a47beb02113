// Package config describes madspark's settings: which variables it reads,
// their effective values with secrets masked, the .env file a user keeps
// them in, and a check that the chosen provider answers.
package config

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/joho/godotenv"

	"github.com/madspark/madspark/atomicfile"
	"github.com/madspark/madspark/llm"
	"github.com/madspark/madspark/provider"
)

// Variables are the settings madspark reads from the environment (and
// .env), in the order Show lists them.
var Variables = []string{
	"MADSPARK_PROVIDER", "MADSPARK_MODE", "MADSPARK_MODEL", "MADSPARK_STRUCTURED_OUTPUT",
	"OPENAI_API_KEY", "OPENAI_BASE_URL", "OLLAMA_HOST",
	"GOOGLE_API_KEY", "GEMINI_API_KEY", "GOOGLE_GENAI_MODEL", "GOOGLE_GENAI_USE_VERTEXAI", "GOOGLE_CLOUD_PROJECT", "GOOGLE_CLOUD_LOCATION",
	"ANTHROPIC_API_KEY",
	"TAVILY_API_KEY", "BRAVE_API_KEY", "TAVILY_BASE_URL", "BRAVE_BASE_URL",
	"MADSPARK_DB", "DATABASE_URL", "REDIS_URL", "MADSPARK_PRICES", "MADSPARK_BREAKER_COOLDOWN", "MADSPARK_API_TOKEN",
	"MADSPARK_MODEL_PATH", "MADSPARK_HF_REPO", "MADSPARK_OUTPUT_DIR", "LOG_LEVEL",
}

// Entry is one setting as it is in effect.
type Entry struct {
	Name string `json:"name"`
	// Value is the value, with secrets masked.
	Value string `json:"value"`
	// Source is "environment" or the settings file's name.
	Source string `json:"source"`
}

// Secret reports whether the variable name holds a secret: a key, a
// token, or a URL that may carry a password.
func Secret(name string) bool {
	return strings.HasSuffix(name, "_KEY") || strings.HasSuffix(name, "_TOKEN")
}

// Mask hides a secret but for enough of its ends to tell two apart:
// "sk-proj-abc…wxyz"; a short one is hidden whole.
func Mask(v string) string {
	if len(v) < 12 {
		return "****"
	}
	return v[:4] + "…" + v[len(v)-4:]
}

// Show returns the settings in effect, those set only: the environment's,
// then the file's (file names the settings file, read with fileVars).
func Show(lookupEnv func(string) (string, bool), file string, fileVars map[string]string) []Entry {
	var out []Entry
	for _, name := range Variables {
		v, src := "", ""
		if ev, ok := lookupEnv(name); ok {
			v, src = ev, "environment"
		} else if fv, ok := fileVars[name]; ok {
			v, src = fv, file
		} else {
			continue
		}
		switch {
		case Secret(name):
			v = Mask(v)
		case strings.HasSuffix(name, "_URL"):
			v = provider.MaskPassword(v)
		}
		out = append(out, Entry{Name: name, Value: v, Source: src})
	}
	return out
}

// InEffect returns what the settings (read through getenv) make madspark
// use, one row each, with why: the provider, its model, the base URL its
// requests go to (a password in it masked) and how a reply's schema
// reaches the model (structured output). The error is settings that
// choose no provider.
func InEffect(getenv func(string) string) ([]Entry, error) {
	s := provider.FromEnv(getenv)
	info, err := s.Choose()
	if err != nil {
		return nil, err
	}
	if info.Mock {
		return []Entry{
			{Name: "provider", Value: info.Name, Source: info.Reason},
			{Name: "model", Value: info.Model, Source: "mock mode"},
			{Name: "base URL", Value: "none", Source: "mock mode calls no model"},
			{Name: "structured output", Value: "none", Source: "mock replies follow the schema"},
		}, nil
	}
	model := "default of " + info.Name
	switch {
	case s.Model != "":
		model = "MADSPARK_MODEL"
	case info.Name == "gemini" && s.GoogleModel != "":
		model = "GOOGLE_GENAI_MODEL"
	}
	base := "default of " + info.Name
	switch {
	case info.Name == "openai" && s.OpenAIBaseURL != "":
		base = "OPENAI_BASE_URL"
	case info.Name == "ollama" && s.OllamaHost != "":
		base = "OLLAMA_HOST"
	case info.Name == "gemini" && s.Vertex:
		base = "Vertex AI (GOOGLE_GENAI_USE_VERTEXAI)"
	}
	structured := "the provider's own"
	switch {
	case info.Name == "gemini":
		structured = "the provider's own: the schema as responseJsonSchema, which Gemini enforces"
	case info.Name != "openai" && info.Name != "ollama":
		structured = "the provider's own: the schema as the input of a tool the model must call"
	case s.Structured != "":
		structured = "MADSPARK_STRUCTURED_OUTPUT"
	case info.Structured == "native":
		structured = "default for OpenAI's own API, which enforces the schema"
	default:
		structured = "default for a server other than OpenAI's"
	}
	switch {
	case info.Name != "openai" && info.Name != "ollama":
	case info.Structured == "prompt":
		structured += ": the schema described in the system prompt"
	case info.Structured == "native" && s.Structured == "":
	default:
		structured += ": the schema sent as response_format (a grammar on llama-server, Ollama, vLLM and LM Studio)"
		if info.Structured == "both" {
			structured += " and described in the prompt"
		}
		structured += "; in the prompt alone if the server refuses response_format"
	}
	return []Entry{
		{Name: "provider", Value: info.Name, Source: info.Reason},
		{Name: "model", Value: info.Model, Source: model},
		{Name: "base URL", Value: info.BaseURL, Source: base},
		{Name: "structured output", Value: info.Structured, Source: structured},
	}, nil
}

// WriteInEffect writes what InEffect returns as a table for people.
func WriteInEffect(w io.Writer, entries []Entry) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "IN EFFECT\tVALUE\tWHY")
	for _, e := range entries {
		fmt.Fprintf(tw, "%s\t%s\t%s\n", e.Name, e.Value, e.Source)
	}
	return tw.Flush()
}

// Save sets values in the settings file at path, keeping what else it
// holds, written whole with mode 0600 (it holds keys). An empty value
// removes its variable.
func Save(path string, values map[string]string) error {
	vars := map[string]string{}
	if _, err := os.Stat(path); err == nil {
		if vars, err = godotenv.Read(path); err != nil {
			return fmt.Errorf("config: read %s: %w", path, err)
		}
	}
	for k, v := range values {
		if v == "" {
			delete(vars, k)
			continue
		}
		vars[k] = v
	}
	keys := make([]string, 0, len(vars))
	for k := range vars {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var b strings.Builder
	b.WriteString("# madspark settings; variables set in the environment win.\n")
	for _, k := range keys {
		fmt.Fprintf(&b, "%s=%q\n", k, vars[k])
	}
	if err := atomicfile.Write(path, []byte(b.String())); err != nil {
		return fmt.Errorf("config: %w", err)
	}
	if err := os.Chmod(path, 0o600); err != nil {
		return fmt.Errorf("config: %w", err)
	}
	return nil
}

// Check opens the provider that getenv selects and sends it one short
// request, so that a wrong key, model or address shows now rather than in
// the first run. Its error never contains a key.
func Check(ctx context.Context, getenv func(string) string) (provider.Info, error) {
	s := provider.FromEnv(getenv)
	c, info, err := provider.Open(ctx, s, nil)
	if err != nil || info.Mock {
		return info, err
	}
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	_, err = c.Generate(ctx, &llm.Request{Agent: "config.check", MaxTokens: 5,
		Messages: []llm.Message{{Role: llm.RoleUser, Content: "Reply with the word OK."}}})
	if err != nil {
		return info, fmt.Errorf("%s did not answer: %s", info.Name, llm.Redact(err.Error(), secrets(getenv)...))
	}
	return info, nil
}

func secrets(getenv func(string) string) []string {
	var out []string
	for _, name := range Variables {
		if Secret(name) {
			if v := getenv(name); v != "" {
				out = append(out, v)
			}
		}
	}
	return out
}

// DefaultFile is the settings file: .env in the working directory.
func DefaultFile() string { return filepath.Join(".", ".env") }

// WriteTable writes entries as a table for people, or says that there are
// none and what that means.
func WriteTable(w io.Writer, entries []Entry) error {
	if len(entries) == 0 {
		_, err := fmt.Fprintln(w, "No settings: madspark runs in mock mode. Run madspark config to set up a provider.")
		return err
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "VARIABLE\tVALUE\tFROM")
	for _, e := range entries {
		fmt.Fprintf(tw, "%s\t%s\t%s\n", e.Name, e.Value, e.Source)
	}
	return tw.Flush()
}
