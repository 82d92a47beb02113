package main

import (
	"encoding/json"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/madspark/madspark/provider/openai/openaitest"
)

// TestCommandWordsNeverStartARun: a word that is, or is close to, a
// command or a subcommand is never taken for a topic, an idea or a file:
// it is refused with exit 2 in one line naming it and what was likely
// meant, and the provider is not called nor a run recorded. A topic of
// one word is given after spark or "--".
func TestCommandWordsNeverStartARun(t *testing.T) {
	srv := openaitest.NewServer(t, liveReply)
	dir := t.TempDir()
	env := map[string]string{"OPENAI_BASE_URL": srv.URL, "OPENAI_API_KEY": "sk-test", "MADSPARK_DB": filepath.Join(dir, "m.db")}
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"inspect"}, "inspect needs RUN_ID; usage: madspark inspect RUN_ID [STEP]"},
		{[]string{"inspect", "0198c3a1-0000-7000-8000-000000000000"}, "no run 0198c3a1-0000-7000-8000-000000000000"},
		{[]string{"insepct", "0198c3a1"}, `unknown command "insepct"; did you mean madspark inspect?`},
		{[]string{"hlep"}, `unknown command "hlep"; did you mean madspark help?`},
		{[]string{"serv"}, `unknown command "serv"; did you mean madspark serve?`},
		{[]string{"bookmark"}, `unknown command "bookmark"; did you mean madspark bookmarks?`},
		{[]string{"sprak", "urban farming"}, `unknown command "sprak"; did you mean madspark spark?`},
		{[]string{"shark"}, `unknown command "shark"; did you mean madspark spark? (a spark run on a topic of one word: madspark spark shark)`},
		{[]string{"urban", "farming"}, `unknown command "urban"; madspark --help lists its commands (a spark run on a topic of one word: madspark spark urban farming; on a topic of several words, quoted: madspark 'urban farming')`},
		{[]string{"runs", "lst"}, `runs has no command "lst"; did you mean madspark runs list?`},
		{[]string{"runs"}, "runs needs a command: cancel, list, show, watch"},
		{[]string{"bookmarks", "lst"}, `bookmarks has no command "lst"; did you mean madspark bookmarks list?`},
		{[]string{"bookmarks"}, "bookmarks needs a command"},
		{[]string{"pipelines", "chek", "x.yaml"}, `pipelines has no command "chek"; did you mean madspark pipelines check?`},
		{[]string{"pipelines"}, "pipelines needs a command: check"},
		{[]string{"batch", "stauts", "b-1"}, `batch has no command "stauts"; did you mean madspark batch status?`},
		{[]string{"assess", "synthesise"}, `assess has no command "synthesise"; did you mean madspark assess synthesize?`},
		{[]string{"run", "lst"}, `no pipeline file "lst": did you mean madspark runs list?`},
		{[]string{"help", "lst"}, `no command "lst"`},
		{[]string{"config", "shwo"}, `config takes no argument, got "shwo"`},
		{[]string{"completion", "bsh"}, `completion has no command "bsh"; did you mean madspark completion bash`},
		{[]string{"chaos"}, "chaos needs PROMPT"},
		{[]string{"runs", "show"}, "runs show needs RUN_ID"},
		{[]string{"spark", "help"}, `"help" is a command word, not a value: madspark spark --help says how to use spark; as a value it is given after "--" (madspark spark -- help)`},
		{[]string{"assess", "help"}, `"help" is a command word`},
		{[]string{"debate", "Help"}, `"Help" is a command word`},
		{[]string{"batch", "help"}, `"help" is a command word`},
	} {
		r := invoke(t, env, tt.args...)
		if r.code != exitUsage || !strings.Contains(r.stderr, tt.want) || strings.Count(r.stderr, "\n") != 1 {
			t.Errorf("%q: exit %d, stderr %q; want exit 2 with %q", tt.args, r.code, r.stderr, tt.want)
		}
		for _, gowords := range []string{"arg(s)", "received", "Error:", "Usage:"} {
			if strings.Contains(r.stderr, gowords) {
				t.Errorf("%q: %q says %q", tt.args, r.stderr, gowords)
			}
		}
	}
	if n := len(srv.Requests()); n != 0 {
		t.Fatalf("command words made %d provider calls", n)
	}
	if r := invoke(t, env, "runs", "list", "--output-format", "json"); strings.TrimSpace(r.stdout) != "[]" {
		t.Fatalf("command words recorded runs: %s", r.stdout)
	}

	// What was meant works: a one-word topic after spark or "--", a
	// topic of several words, and the inspector on the run.
	small := []string{"--output-format", "json", "--num-candidates", "1", "--num-top-candidates", "1"}
	for topic, args := range map[string][]string{
		"inspect":       append([]string{"spark", "inspect"}, small...),
		"shark":         append(small, "--", "shark"),
		"urban farming": append(small, "urban farming"),
		"help":          append(append([]string{"spark"}, small...), "--", "help"),
	} {
		r := invoke(t, env, args...)
		var rep report
		if r.code != 0 || json.Unmarshal([]byte(r.stdout), &rep) != nil || rep.Topic != topic {
			t.Fatalf("%q: exit %d, topic %q: %s", args, r.code, rep.Topic, r.stderr)
		}
		calls := len(srv.Requests())
		insp := invoke(t, env, "inspect", rep.RunID)
		if insp.code != 0 || !strings.Contains(insp.stdout, "generate") || len(srv.Requests()) != calls {
			t.Fatalf("inspect %s: exit %d: %s%s", rep.RunID, insp.code, insp.stdout, insp.stderr)
		}
		step := invoke(t, env, "inspect", rep.RunID, "generate", "--output-format", "json")
		var s struct {
			Key   string `json:"key"`
			Calls []any  `json:"calls"`
		}
		if step.code != 0 || json.Unmarshal([]byte(step.stdout), &s) != nil || s.Key != "generate" || len(s.Calls) == 0 {
			t.Fatalf("inspect %s generate: exit %d: %s%s", rep.RunID, step.code, step.stdout, step.stderr)
		}
	}
}

// TestSmallWordingSlips: the mock does not paste a context into a
// sentence, export takes md for markdown (the MCP resource's name), and
// counts agree with their nouns.
func TestSmallWordingSlips(t *testing.T) {
	env := mockEnv(t)
	r := invoke(t, env, "--output-format", "json", "urban farming", "low-cost, scalable solutions")
	var rep report
	if r.code != 0 || json.Unmarshal([]byte(r.stdout), &rep) != nil {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	for _, c := range rep.Candidates {
		if idea := c["idea"].(string); strings.Contains(idea, "Designed to be low-cost") || !strings.Contains(idea, "Within the brief: low-cost, scalable solutions.") {
			t.Fatalf("mock idea %q", idea)
		}
	}
	md := invoke(t, env, "export", rep.RunID, "--format", "md")
	markdown := invoke(t, env, "export", rep.RunID, "--format", "markdown")
	if md.code != 0 || md.stdout == "" || md.stdout != markdown.stdout {
		t.Fatalf("--format md: exit %d: %s", md.code, md.stderr)
	}
	chaos := invoke(t, env, "chaos", "quiet streets at night", "--iterations", "1", "--output-dir", t.TempDir())
	if chaos.code != 0 || regexp.MustCompile(`accepted 1 new ideas|holds 1 ideas|accepted (0|[2-9]|\d\d+) new idea;`).MatchString(chaos.stdout) ||
		!regexp.MustCompile(`This run accepted \d+ new ideas?; the memory "[^"]+" now holds \d+ ideas?\.`).MatchString(chaos.stdout) {
		t.Fatalf("chaos summary: %s", chaos.stdout)
	}
}
