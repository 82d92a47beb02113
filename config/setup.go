package config

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"strings"

	"golang.org/x/term"
)

// AnswerError is an answer SetUp cannot use: a question left unanswered,
// an unknown provider, a missing key.
type AnswerError struct{ Msg string }

func (e *AnswerError) Error() string { return e.Msg }

func answerError(format string, a ...any) error { return &AnswerError{fmt.Sprintf(format, a...)} }

// Ask asks question (with its default, def, shown) and returns the answer,
// def for an empty one. A secret answer is not echoed on a terminal.
type Ask func(question, def string, secret bool) (string, error)

// Prompter asks on out and reads the answers from in, line by line; a
// secret is read without echo when in is a terminal.
func Prompter(in io.Reader, out io.Writer) Ask {
	lines := bufio.NewReader(in)
	return func(question, def string, secret bool) (string, error) {
		if def != "" {
			fmt.Fprintf(out, "%s [%s]: ", question, def)
		} else {
			fmt.Fprintf(out, "%s: ", question)
		}
		var line string
		if f, ok := in.(*os.File); ok && secret && term.IsTerminal(int(f.Fd())) {
			b, err := term.ReadPassword(int(f.Fd()))
			fmt.Fprintln(out)
			if err != nil {
				return "", fmt.Errorf("read %s: %w", strings.ToLower(question), err)
			}
			line = string(b)
		} else {
			s, err := lines.ReadString('\n')
			if err != nil && (err != io.EOF || s == "") {
				return "", answerError("no answer to %q", question)
			}
			line = s
		}
		if line = strings.TrimSpace(line); line == "" {
			return def, nil
		}
		return line, nil
	}
}

// SetUp asks for the provider, its key and the model, checks them with one
// short request (unless check is false; progress goes to notices), and
// saves them to file. It returns what it saved.
func SetUp(ctx context.Context, ask Ask, notices io.Writer, file string, check bool) (map[string]string, error) {
	name, err := ask("Provider (openai, anthropic, gemini, ollama)", "openai", false)
	if err != nil {
		return nil, err
	}
	values := map[string]string{"MADSPARK_PROVIDER": strings.ToLower(name)}
	var keyVar, defModel string
	switch values["MADSPARK_PROVIDER"] {
	case "openai":
		keyVar, defModel = "OPENAI_API_KEY", "gpt-4o-mini"
		base, err := ask("Base URL of an OpenAI-compatible server (empty for OpenAI)", "", false)
		if err != nil {
			return nil, err
		}
		values["OPENAI_BASE_URL"] = base
	case "anthropic":
		keyVar, defModel = "ANTHROPIC_API_KEY", "claude-sonnet-4-6"
	case "gemini":
		keyVar, defModel = "GOOGLE_API_KEY", "gemini-2.5-flash"
	case "ollama":
		defModel = "llama3.2"
		host, err := ask("Ollama address", "127.0.0.1:11434", false)
		if err != nil {
			return nil, err
		}
		values["OLLAMA_HOST"] = host
	default:
		return nil, answerError("unknown provider %q: choose openai, anthropic, gemini or ollama", name)
	}
	if keyVar != "" {
		optional := values["OPENAI_BASE_URL"] != ""
		q := "API key"
		if optional {
			q = "API key (empty for none)"
		}
		key, err := ask(q, "", true)
		if err != nil {
			return nil, err
		}
		if key == "" && !optional {
			return nil, answerError("an API key is required for %s", name)
		}
		values[keyVar] = key
	}
	if values["MADSPARK_MODEL"], err = ask("Model", defModel, false); err != nil {
		return nil, err
	}
	if check {
		fmt.Fprintf(notices, "Checking %s with one short request…\n", name)
		getenv := func(k string) string {
			if v, ok := values[k]; ok {
				return v
			}
			if k == "MADSPARK_MODE" {
				return "live"
			}
			return ""
		}
		if _, err := Check(ctx, getenv); err != nil {
			return nil, fmt.Errorf("the check failed, nothing was written: %w", err)
		}
	}
	return values, Save(file, values)
}
