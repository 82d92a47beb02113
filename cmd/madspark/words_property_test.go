package main

import (
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/spf13/cobra"
	"pgregory.net/rapid"

	"github.com/madspark/madspark/provider/openai/openaitest"
)

// TestCommandWordsProperty: a word one slip away from a command or a
// subcommand (a letter left out, added, changed or two swapped), alone or
// before more words, is never taken for a topic, an idea or a file: it
// exits 2 with one line that names it, and no provider call is made nor
// run recorded. The words are drawn from the command tree itself, so a
// command added later is covered without a case written for it.
func TestCommandWordsProperty(t *testing.T) {
	srv := openaitest.NewServer(t, liveReply)
	dir := t.TempDir()
	env := map[string]string{"OPENAI_BASE_URL": srv.URL, "OPENAI_API_KEY": "sk-test", "MADSPARK_DB": filepath.Join(dir, "m.db"), "MADSPARK_OUTPUT_DIR": dir}
	root := (&cli{env: func(k string) string { return env[k] }}).rootCmd()
	type place struct {
		parent []string // the command path before the word
		names  map[string]bool
	}
	var places []place
	var visit func(c *cobra.Command, path []string)
	visit = func(c *cobra.Command, path []string) {
		subs := c.Commands()
		if len(subs) == 0 {
			return
		}
		p := place{parent: path, names: map[string]bool{}}
		if len(path) == 0 {
			p.names["help"] = true // cobra's, added when it runs
		}
		for _, s := range subs {
			p.names[s.Name()] = true
			for _, a := range s.Aliases {
				p.names[a] = true
			}
		}
		places = append(places, p)
		for _, s := range subs {
			visit(s, append(append([]string{}, path...), s.Name()))
		}
	}
	visit(root, nil)

	rapid.Check(t, func(rt *rapid.T) {
		p := rapid.SampledFrom(places).Draw(rt, "place")
		var names []string
		for n := range p.names {
			if len(n) >= 3 {
				names = append(names, n)
			}
		}
		name := rapid.SampledFrom(slices.Sorted(slices.Values(names))).Draw(rt, "command")
		word := slip(rt, name)
		if p.names[word] || strings.HasPrefix(word, "-") {
			rt.Skip("the slip is a command's name")
		}
		args := append(append([]string{}, p.parent...), word)
		if rapid.Bool().Draw(rt, "more words") {
			args = append(args, "urban farming")
		}
		r := invoke(t, env, args...)
		if r.code != exitUsage || strings.Count(r.stderr, "\n") != 1 || !strings.Contains(r.stderr, word) {
			rt.Fatalf("%q: exit %d, stderr %q; want exit 2 in one line naming %q", args, r.code, r.stderr, word)
		}
		if n := len(srv.Requests()); n != 0 {
			rt.Fatalf("%q made %d provider calls", args, n)
		}
	})
	if r := invoke(t, env, "runs", "list", "--output-format", "json"); strings.TrimSpace(r.stdout) != "[]" {
		t.Fatalf("slips of command words recorded runs: %s", r.stdout)
	}
}

// slip returns name with one slip of the keyboard: a letter left out,
// added, changed, or two neighbours swapped.
func slip(t *rapid.T, name string) string {
	b := []byte(name)
	i := rapid.IntRange(0, len(b)-1).Draw(t, "at")
	letter := rapid.ByteRange('a', 'z').Draw(t, "letter")
	switch rapid.IntRange(0, 3).Draw(t, "slip") {
	case 0:
		return string(b[:i]) + string(b[i+1:])
	case 1:
		return string(b[:i]) + string(letter) + string(b[i:])
	case 2:
		b[i] = letter
		return string(b)
	default:
		if i == len(b)-1 {
			i--
		}
		b[i], b[i+1] = b[i+1], b[i]
		return string(b)
	}
}
