package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestParse: madspark parse reads a reply against a schema file or a
// built-in agent's, prints the value (and, as JSON, the repairs), exits 0
// for a usable reply and 2 with one line for one that is not.
func TestParse(t *testing.T) {
	dir := t.TempDir()
	write := func(name, content string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	schema := write("schema.json", `{"type":"object","properties":{"pitch":{"type":"string"},"score":{"type":"number","minimum":0,"maximum":10},
		"tags":{"type":"array","items":{"type":"string"}}},"required":["pitch","score","tags"],"additionalProperties":false}`)
	reply := write("reply.txt", "Here you go:\n```json\n{\"response\": {\"Pitch\": \"Tools for all\", \"score\": \"7 out of 10\", \"tags\": \"- shared\\n- local\",}}\n```")

	t.Run("json", func(t *testing.T) {
		r := invoke(t, nil, "parse", "--schema", schema, "--output-format", "json", reply)
		if r.code != 0 {
			t.Fatalf("exit %d: %s", r.code, r.stderr)
		}
		var out struct {
			Value   map[string]any `json:"value"`
			Repairs []struct{ Rule, Path, Action string }
			Usable  bool `json:"usable"`
		}
		if err := json.Unmarshal([]byte(r.stdout), &out); err != nil {
			t.Fatal(err)
		}
		if !out.Usable || out.Value["pitch"] != "Tools for all" || out.Value["score"] != 7.0 || len(out.Value["tags"].([]any)) != 2 {
			t.Fatalf("value %v, usable %v", out.Value, out.Usable)
		}
		rules := map[string]bool{}
		for _, rep := range out.Repairs {
			rules[rep.Rule] = true
		}
		for _, want := range []string{"syntax", "shape", "key", "type", "split"} {
			if !rules[want] {
				t.Errorf("no %s repair in %+v", want, out.Repairs)
			}
		}
	})
	t.Run("text, from standard input, for an agent", func(t *testing.T) {
		r := invokeIn(t, `[{"winner": "**A**", "Reasons": "Clearer."}]`, "parse", "--agent", "eval.judge", "-")
		if r.code != 0 || !strings.Contains(r.stdout, `"winner": "A"`) || !strings.Contains(r.stderr, "repair: enum /winner") {
			t.Fatalf("exit %d\nstdout %s\nstderr %s", r.code, r.stdout, r.stderr)
		}
	})
	t.Run("unusable", func(t *testing.T) {
		r := invokeIn(t, `{"score": 7, "tags": []}`, "parse", "--schema", schema)
		if r.code != 2 || !strings.Contains(r.stderr, `"pitch" is missing`) || strings.Count(strings.TrimSpace(r.stderr), "\n") != 0 {
			t.Fatalf("exit %d, stderr %q", r.code, r.stderr)
		}
	})
	t.Run("agents", func(t *testing.T) {
		r := invoke(t, nil, "parse", "--agents")
		for _, want := range []string{"spark.evaluate", "chaos.judge", "debate.propose", "assess.reviewer", "proposal.qc", "eval.judge"} {
			if !strings.Contains(r.stdout, want) {
				t.Errorf("--agents lacks %s:\n%s", want, r.stdout)
			}
		}
	})
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"nothing to read against", []string{"parse", reply}, "--schema FILE or --agent NAME"},
		{"both", []string{"parse", "--schema", schema, "--agent", "eval.judge", reply}, "not both"},
		{"unknown agent", []string{"parse", "--agent", "spark.nope", reply}, `unknown agent "spark.nope"`},
		{"no schema file", []string{"parse", "--schema", filepath.Join(dir, "none.json"), reply}, "--schema"},
		{"bad schema", []string{"parse", "--schema", reply, reply}, "--schema"},
		{"no reply file", []string{"parse", "--schema", schema, filepath.Join(dir, "none.txt")}, "reply file"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := invoke(t, nil, tc.args...)
			if r.code != 2 || !strings.Contains(r.stderr, tc.want) {
				t.Fatalf("exit %d, stderr %q, want 2 and %q", r.code, r.stderr, tc.want)
			}
		})
	}
}

// invokeIn is invoke with stdin as standard input and no environment.
func invokeIn(t testing.TB, stdin string, args ...string) result {
	t.Helper()
	var out, errb bytes.Buffer
	code := run(context.Background(), args, func(string) string { return "" }, strings.NewReader(stdin), &out, &errb)
	return result{code, out.String(), errb.String()}
}
