package main

import (
	"encoding/json"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// progressLine is a line of progress without a terminal: time, stage,
// percentage, message, calls and tokens so far.
var progressLine = regexp.MustCompile(`^\d\d:\d\d:\d\d (\S+) (\d+)% (.*) · (\d+) calls? · (\d+) tokens$`)

// TestProgressWithoutATerminal: with stderr not a terminal, every long
// command writes one plain line per stage (or batch item) on stderr, the
// calls and tokens so far growing, and a last line when the run ends;
// --progress json writes one JSON object per event; --quiet nothing.
func TestProgressWithoutATerminal(t *testing.T) {
	env := mockEnv(t)
	file := writeTemp(t, "two.yaml", "name: two\ninputs:\n  topic: {type: string, required: true}\n"+
		"agents:\n  a: {prompt: \"ideas on {{.topic}}\", output: {t: string}}\n  b: {prompt: \"more on {{.a.t}}\", output: {t: string}}\nsteps: [a, b]\n")
	for _, tt := range []struct {
		name   string
		args   []string
		stages []string
		calls  int
	}{
		{"spark", []string{"urban farming", "--no-cache"}, []string{"generate", "evaluate", "advocate", "improve", "re_evaluate"}, 6},
		{"run", []string{"run", file, "--input", "topic=urban farming", "--no-cache"}, []string{"a", "b"}, 2},
		{"eval", []string{"eval", "--pipeline", "spark", "--topics", "builtin", "--limit", "1", "--no-cache", "--fresh"}, []string{"topics"}, 9},
	} {
		t.Run(tt.name, func(t *testing.T) {
			r := invoke(t, env, tt.args...)
			if r.code != 0 {
				t.Fatalf("exit %d: %s", r.code, r.stderr)
			}
			var stages []string
			calls, tokens, ended := 0, 0, false
			for _, line := range strings.Split(strings.TrimSpace(r.stderr), "\n") {
				if strings.HasPrefix(line, "madspark: ") {
					continue
				}
				if ended {
					t.Fatalf("a line after the last: %q", line)
				}
				if m := regexp.MustCompile(`^\d\d:\d\d:\d\d ended after \S+ · (\d+) calls? · (\d+) tokens$`).FindStringSubmatch(line); m != nil {
					calls, _ = strconv.Atoi(m[1])
					ended = true
					continue
				}
				m := progressLine.FindStringSubmatch(line)
				if m == nil {
					t.Fatalf("not a progress line: %q\n%s", line, r.stderr)
				}
				c, _ := strconv.Atoi(m[4])
				tk, _ := strconv.Atoi(m[5])
				if c < calls || tk < tokens {
					t.Fatalf("the calls or tokens went down: %q\n%s", line, r.stderr)
				}
				calls, tokens = c, tk
				stages = append(stages, m[1])
			}
			if !ended || calls != tt.calls || tokens == 0 {
				t.Fatalf("ended %v with %d calls, %d tokens; want %d calls:\n%s", ended, calls, tokens, tt.calls, r.stderr)
			}
			for _, s := range tt.stages {
				if !strings.Contains(" "+strings.Join(stages, " ")+" ", " "+s) {
					t.Fatalf("no line for stage %s: %v\n%s", s, stages, r.stderr)
				}
			}

			quiet := invoke(t, env, append(tt.args, "--quiet")...)
			for _, line := range strings.Split(strings.TrimSpace(quiet.stderr), "\n") {
				if quiet.code != 0 || line != "" && !strings.HasPrefix(line, "madspark: ") {
					t.Fatalf("--quiet: exit %d, %q", quiet.code, quiet.stderr)
				}
			}

			js := invoke(t, env, append(tt.args, "--progress", "json")...)
			var last struct {
				Type     string `json:"type"`
				Stage    string `json:"stage"`
				RunID    string `json:"run_id"`
				LLMCalls int    `json:"llm_calls"`
			}
			n := 0
			for _, line := range strings.Split(strings.TrimSpace(js.stderr), "\n") {
				if strings.HasPrefix(line, "madspark: ") {
					continue
				}
				if err := json.Unmarshal([]byte(line), &last); err != nil || last.RunID == "" || last.Type == "" {
					t.Fatalf("--progress json: %q: %v", line, err)
				}
				n++
			}
			if js.code != 0 || n < len(tt.stages)+1 || last.Type != "end" || last.LLMCalls != tt.calls {
				t.Fatalf("--progress json: exit %d, %d lines, last %+v:\n%s", js.code, n, last, js.stderr)
			}
		})
	}

	batchFile := writeTemp(t, "items.csv", "topic\nurban farming\nquiet cities\n")
	r := invoke(t, env, "batch", batchFile, "--no-cache", "--output", writeTemp(t, "out.json", ""))
	items := regexp.MustCompile(`(?m)^\d\d:\d\d:\d\d item [12]/2 \(line [23]\) succeeded \(run \S+\)$`).FindAllString(r.stderr, -1)
	if r.code != 0 || len(items) != 2 {
		t.Fatalf("batch: exit %d, a line per item wanted:\n%s", r.code, r.stderr)
	}

	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"urban farming", "--progress", "live"}, "--progress live draws on a terminal"},
		{[]string{"urban farming", "--progress", "dots"}, `--progress must be auto, live, lines, json or none, got "dots"`},
		{[]string{"urban farming", "--progress", "json", "--quiet"}, "--quiet turns progress off"},
	} {
		if r := invoke(t, env, tt.args...); r.code != exitUsage || !strings.Contains(r.stderr, tt.want) {
			t.Errorf("%q: exit %d, %q", tt.args, r.code, r.stderr)
		}
	}
}
