package flow_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/madspark/madspark/flow"
	"github.com/madspark/madspark/input"
)

func TestProblems(t *testing.T) {
	cases := []struct {
		name, src string
		want      []string // "line: substring"
	}{
		{"unknown agent", `name: x
agents:
  a: {prompt: "hi", output: {t: string}}
steps: [a, b]
`, []string{`4: unknown agent "b"`}},
		{"forward reference", `name: x
agents:
  a:
    prompt: "use {{.b.t}}"
    output: {t: string}
  b: {prompt: "hi", output: {t: string}}
steps: [a, b]
`, []string{"4: agent a refers to {{.b.t}}, which is not produced earlier"}},
		{"same group", `name: x
agents:
  a: {prompt: "hi", output: {t: string}}
  b: {prompt: "{{.a.t}}", output: {t: string}}
steps: [[a, b]]
`, []string{"4: agent b refers to {{.a.t}}, which runs in the same parallel group"}},
		{"control characters", "name: x\nagents:\n  a: {prompt: \"hi\\0there\", output: {t: string}}\n  b:\n    prompt: \"title \\e]0;pwned\\a\"\n    output: {t: string}\nsteps: [a, b]\n",
			[]string{"3: this value contains a NUL byte", "5: this value contains the control character U+001B"}},
		{"cycle", `name: x
agents:
  a: {prompt: "{{.b.t}}", output: {t: string}}
  b: {prompt: "{{.a.t}}", output: {t: string}}
steps: [a, b]
`, []string{"3: cycle: a → b → a"}},
		{"unused, bad type, unknown key, missing field", `name: x
inputs:
  topic: {type: text}
agents:
  a:
    prompt: "{{.a2.nope}}"
    output: {t: strin}
    colour: red
  a2: {prompt: "hi", output: {t: string}}
  b: {prompt: "hi", output: {t: string}}
steps: [a2, a]
`, []string{`3: input topic: unknown type "text"`, `6: agent a: agent a2 has no output field nope`, `7: agent a: output field t: unknown type "strin"`, `8: unknown key "colour"`, "10: agent b is never used"}},
		{"an input of a bad type is still an input", `name: x
inputs:
  topic: {type: strin, required: true, default: [a]}
agents:
  a: {prompt: "{{.topic}}", output: {t: string}}
steps: [a]
`, []string{`3: input topic: unknown type "strin"`, "3: input topic: a required input has no default"}},
		{"its own output, told once", `name: x
agents:
  a: {prompt: "{{.a.t}}", output: {t: string}}
steps: [a]
`, []string{"3: agent a refers to its own output {{.a.t}}"}},
		{"multi-line prompt", `name: x
agents:
  a:
    prompt: |
      first line
      then {{.missing}}
    output: {t: string}
steps: [a]
`, []string{"6: agent a: {{.missing}} is neither an input nor an agent"}},
		{"loop", `name: x
agents:
  a: {prompt: "hi", output: {t: string}}
steps:
  - loop: {steps: [a], until: "a.t ~ 3", max: 99}
`, []string{"5: loop max must be 1..20", "5: loop until:"}},
		{"syntax", "name: [x\n", []string{"not valid YAML"}},
		{"default type", `name: x
inputs:
  n: {type: number, default: many}
agents:
  a: {prompt: "{{.n}}", output: {t: string}}
steps: [a]
`, []string{`3: input n: "many" is not a number`}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := flow.Parse("f.yaml", []byte(c.src), nil)
			var ps flow.Problems
			if !errors.As(err, &ps) {
				t.Fatalf("err %v, want problems", err)
			}
			var all []string
			for _, p := range ps {
				all = append(all, p.String())
			}
			text := strings.Join(all, "\n")
			for _, w := range c.want {
				line, msg, ok := strings.Cut(w, ": ")
				if !ok || strings.Contains(line, " ") {
					line, msg = "", w
				}
				if !strings.Contains(text, "f.yaml:"+line) || !strings.Contains(text, msg) || (line != "" && !strings.Contains(text, "f.yaml:"+line+": "+msg)) {
					t.Errorf("missing %q in:\n%s", w, text)
				}
			}
			if len(ps) != len(c.want) {
				t.Errorf("%d problems, want %d:\n%s", len(ps), len(c.want), text)
			}
		})
	}
}

func FuzzParse(f *testing.F) {
	// Small seeds: the fuzzer minimizes each new input, which takes long
	// with big ones. testdata/fuzz/FuzzParse holds the pitch example.
	f.Add([]byte("name: x\ninputs:\n  n: {type: integer, default: 2}\nagents:\n  a: {prompt: \"{{.n}}\", output: {t: [string]}}\n  b:\n    prompt: \"{{.it}}\"\n    output: {s: number}\n    for_each: {over: a.t, as: it, mode: batch}\nsteps: [a, b]\n"))
	f.Add([]byte("name: x\nagents:\n  a: {prompt: \"{{.a.t}}\", output: {t: string}}\nsteps:\n  - loop: {steps: [a], until: \"a.t == 1\", max: 2}\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		p, err := flow.Parse("f.yaml", data, nil)
		if err == nil && p == nil {
			t.Fatal("nil pipeline without error")
		}
		var ps flow.Problems
		if err != nil && (!errors.As(err, &ps) || len(ps) == 0) {
			t.Fatalf("error %v is not problems", err)
		}
		if err == nil {
			_ = p.Definition()
			for name, a := range p.Agents {
				if input.Text("prompt", a.Prompt) != nil || input.Text("system", a.System) != nil {
					t.Fatalf("agent %s: a prompt input.Text refuses: %q %q", name, a.Prompt, a.System)
				}
			}
		}
		for _, pr := range ps {
			if strings.ContainsAny(pr.String(), "\n\r") {
				t.Fatalf("a problem of more than one line: %q", pr)
			}
		}
	})
}

// TestIncludeStaysInTheFileDirectory: an {{include:}} that names a
// symbolic link out of the pipeline file's directory is a problem of the
// file, before any call, and the linked file's text is never read into a
// prompt; so is a file of a pipelines directory that is such a link.
func TestIncludeStaysInTheFileDirectory(t *testing.T) {
	top := t.TempDir()
	secret := filepath.Join(top, "passwd")
	if err := os.WriteFile(secret, []byte("root:x:0:0:secret\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(top, "pipelines")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(secret, filepath.Join(dir, "notes.md")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(secret, filepath.Join(dir, "linked.yaml")); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(dir, "leak.yaml")
	src := "name: leak\nagents:\n  a: {prompt: \"{{include:notes.md}}\", output: {t: string}}\nsteps: [a]\n"
	if err := os.WriteFile(file, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := flow.Load(file)
	if err == nil || strings.Contains(err.Error(), "root:x") || !strings.Contains(err.Error(), "leak.yaml:3: agent a: prompt a: include notes.md: ") || !strings.Contains(err.Error(), "open notes.md: leads out of its directory") {
		t.Fatalf("include of a link out: %v", err)
	}
	ps, probs, err := flow.LoadEach(dir)
	if err != nil || len(ps) != 0 || len(probs) != 2 {
		t.Fatalf("LoadEach: %d pipelines, %v, %v", len(ps), probs, err)
	}
	if !strings.Contains(probs[0].String(), "leak.yaml:3") || !strings.Contains(probs[1].String(), "linked.yaml:1: cannot be read: leads out of its directory") {
		t.Errorf("problems: %v", probs)
	}
}
