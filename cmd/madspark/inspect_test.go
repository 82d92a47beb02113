package main

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/madspark/madspark/inspect"
	"github.com/madspark/madspark/provider/openai/openaitest"
)

// TestRunsShowSteps: a spark run's steps as a table and as JSON, one step's
// calls in full, and bad uses of the flags.
func TestRunsShowSteps(t *testing.T) {
	env := mockEnv(t)
	rep := decode(t, invoke(t, env, "urban farming", "--output-format", "json"))

	table := invoke(t, env, "runs", "show", rep.RunID, "--steps")
	lines := strings.Split(strings.TrimSpace(table.stdout), "\n")
	if table.code != 0 || len(lines) < 4 || !strings.HasPrefix(lines[0], "STEP") || !strings.Contains(lines[0], "REPAIRS") {
		t.Fatalf("table: %+v", table)
	}
	if !strings.HasPrefix(lines[1], "generate ") || !strings.Contains(lines[1], "spark.") || !strings.Contains(lines[1], "mock-1") {
		t.Errorf("first row %q", lines[1])
	}

	js := invoke(t, env, "runs", "show", rep.RunID, "--steps", "--output-format", "json")
	var v struct {
		RunID string           `json:"run_id"`
		Steps []map[string]any `json:"steps"`
	}
	if js.code != 0 || json.Unmarshal([]byte(js.stdout), &v) != nil || v.RunID != rep.RunID || len(v.Steps) != len(lines)-2 {
		t.Fatalf("json: %+v", js)
	}
	for _, s := range v.Steps {
		for _, k := range []string{"key", "agent", "model", "status", "attempts", "cached", "input_tokens", "output_tokens",
			"latency_ms", "cost_usd", "repairs", "prompt", "response", "started_at"} {
			if _, ok := s[k]; !ok {
				t.Errorf("step %v lacks %q", s["key"], k)
			}
		}
	}
	prompt := v.Steps[0]["prompt"].([]any)
	user := prompt[len(prompt)-1].(map[string]any)["content"].(string)

	one := invoke(t, env, "runs", "show", rep.RunID, "--step", "generate")
	if one.code != 0 || !strings.Contains(one.stdout, "--- system ---") || !strings.Contains(one.stdout, strings.TrimSpace(user)) ||
		!strings.Contains(one.stdout, "--- response ---\n"+strings.TrimSpace(v.Steps[0]["response"].(string))) {
		t.Fatalf("--step generate: %+v", one)
	}

	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"runs", "show", rep.RunID, "--step", "nope"}, `madspark: run ` + rep.RunID + ` has no step "nope"`},
		{[]string{"runs", "show", rep.RunID, "--step", ""}, "--step needs a step key"},
		{[]string{"runs", "show", rep.RunID, "--steps", "--step", "generate"}, "cannot be used together"},
		{[]string{"runs", "show", rep.RunID, "--steps", "--output-format", "markdown"}, `unknown output format "markdown" (want table, json)`},
		{[]string{"runs", "show", "missing", "--steps"}, "no run missing"},
	} {
		r := invoke(t, env, tc.args...)
		if r.code != 2 || !strings.Contains(r.stderr, tc.want) || strings.Count(r.stderr, "\n") != 1 || r.stdout != "" {
			t.Errorf("%v: exit %d stderr %q; want exit 2 and %q", tc.args, r.code, r.stderr, tc.want)
		}
	}
}

// TestRunsShowStepsLive: a run against the OpenAI wire fake records each
// call's prompt and the provider's raw reply, and nowhere the API key.
func TestRunsShowStepsLive(t *testing.T) {
	const key = "sk-test-inspect-secret-987"
	srv := openaitest.NewServer(t, liveReply)
	env := map[string]string{
		"OPENAI_BASE_URL": srv.URL, "OPENAI_API_KEY": key, "MADSPARK_MODEL": "gpt-4o-mini",
		"MADSPARK_DB": filepath.Join(t.TempDir(), "m.db"),
	}
	rep := decode(t, invoke(t, env, "urban farming", "--output-format", "json"))
	js := invoke(t, env, "runs", "show", rep.RunID, "--steps", "--output-format", "json")
	var v inspect.View
	if js.code != 0 || json.Unmarshal([]byte(js.stdout), &v) != nil {
		t.Fatalf("json: %+v", js)
	}
	calls := 0
	for _, s := range v.Steps {
		for _, c := range s.Calls {
			calls++
			if c.Provider != "openai" || c.Model != "gpt-4o-mini" || c.InputTokens != 100 || c.OutputTokens != 50 || c.Response == "" {
				t.Errorf("step %s: call %+v", s.Key, c)
			}
		}
	}
	if reqs := srv.Requests(); calls != len(reqs) || calls == 0 {
		t.Errorf("%d calls recorded, %d requests made", calls, len(reqs))
	}
	rec := invoke(t, env, "runs", "show", rep.RunID, "--output-format", "record")
	one := invoke(t, env, "runs", "show", rep.RunID, "--step", "generate")
	for _, out := range []string{js.stdout, rec.stdout, one.stdout} {
		if strings.Contains(out, key) || strings.Contains(strings.ToLower(out), "authorization") {
			t.Fatal("the API key or a header is recorded")
		}
	}
}
