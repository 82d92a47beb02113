package prompt

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"testing/fstest"
)

var builtin = fstest.MapFS{
	"agents/analyst/system.md":       {Data: []byte("You are an analyst.\n{{include:shared/rules.md}}\nEnd.\n")},
	"agents/analyst/concise.md":      {Data: []byte("Be brief. {{ include: shared/rules.md }}")},
	"agents/analyst/user/initial.md": {Data: []byte("Idea: {{.Idea}}\n{{include:shared/nested.md}}")},
	"shared/rules.md":                {Data: []byte("Rule one.\n")},
	"shared/nested.md":               {Data: []byte("Nested: {{include:shared/rules.md}}\n")},
	"experimental/analyst/wild.md":   {Data: []byte("Be wild.")},
	"loop/a.md":                      {Data: []byte("A {{include:loop/b.md}}")},
	"loop/b.md":                      {Data: []byte("B {{include:loop/c.md}}")},
	"loop/c.md":                      {Data: []byte("C {{include:loop/a.md}}")},
	"loop/self.md":                   {Data: []byte("S {{include:loop/self.md}}")},
	"broken/missing.md":              {Data: []byte("X {{include:shared/nowhere.md}}")},
	"broken/escape.md":               {Data: []byte("X {{include:../etc/passwd}}")},
	"broken/empty.md":                {Data: []byte("X {{include:}}")},
}

func write(t *testing.T, dir, name, text string) string {
	t.Helper()
	p := filepath.Join(dir, filepath.FromSlash(name))
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestIncludesResolveRecursively(t *testing.T) {
	l, err := New(builtin, "")
	if err != nil {
		t.Fatal(err)
	}
	got, err := l.Load("agents/analyst/system.md")
	if err != nil || got != "You are an analyst.\nRule one.\nEnd.\n" {
		t.Fatalf("%q %v", got, err)
	}
	got, err = l.Load("agents/analyst/user/initial.md")
	if err != nil || got != "Idea: {{.Idea}}\nNested: Rule one." {
		t.Fatalf("%q %v", got, err)
	}
}

func TestIncludeErrors(t *testing.T) {
	l, _ := New(builtin, "")
	for name, want := range map[string]string{
		"loop/a.md":         "prompt loop/a.md: include cycle: loop/a.md → loop/b.md → loop/c.md → loop/a.md",
		"loop/b.md":         "include cycle: loop/b.md → loop/c.md → loop/a.md → loop/b.md",
		"loop/self.md":      "include cycle: loop/self.md → loop/self.md",
		"broken/missing.md": "prompt broken/missing.md: include shared/nowhere.md: not found in built-in prompts",
		"broken/escape.md":  "include ../etc/passwd: invalid path",
		"broken/empty.md":   "empty include",
		"none.md":           "prompt none.md: not found",
	} {
		_, err := l.Load(name)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want %q", name, err, want)
		}
	}
	_, err := l.Load("broken/missing.md")
	if !errors.Is(err, ErrNotFound) {
		t.Errorf("a missing include does not wrap ErrNotFound: %v", err)
	}
}

func TestDeepIncludesAreBounded(t *testing.T) {
	// A chain of distinct files longer than MaxDepth.
	fsys := fstest.MapFS{}
	name := func(i int) string { return "d/" + strings.Repeat("n", i+1) + ".md" }
	for i := 0; i < MaxDepth+5; i++ {
		fsys[name(i)] = &fstest.MapFile{Data: []byte("{{include:" + name(i+1) + "}}")}
	}
	fsys[name(MaxDepth+5)] = &fstest.MapFile{Data: []byte("bottom")}
	l, _ := New(fsys, "")
	if _, err := l.Load(name(0)); err == nil || !strings.Contains(err.Error(), "nested deeper") {
		t.Fatalf("deep chain: %v", err)
	}
	short, _ := New(fstest.MapFS{"a.md": {Data: []byte("{{include:b.md}}")}, "b.md": {Data: []byte("bottom")}}, "")
	if got, err := short.Load("a.md"); err != nil || got != "bottom" {
		t.Fatalf("%q %v", got, err)
	}
}

func TestOverrideDirectoryShadowsBuiltins(t *testing.T) {
	dir := t.TempDir()
	write(t, dir, "shared/rules.md", "Local rule.")
	write(t, dir, "agents/analyst/mine.md", "Mine. {{include:shared/rules.md}}")
	l, err := New(builtin, dir)
	if err != nil {
		t.Fatal(err)
	}
	// A built-in prompt includes the overridden piece.
	if got, _ := l.Load("agents/analyst/system.md"); got != "You are an analyst.\nLocal rule.\nEnd.\n" {
		t.Fatalf("%q", got)
	}
	for _, tc := range []struct{ choice, want, source string }{
		{"", "You are an analyst.\nLocal rule.\nEnd.\n", "agents/analyst/system.md"},
		{"concise.md", "Be brief. Local rule.", "agents/analyst/concise.md"},
		{"mine.md", "Mine. Local rule.", "agents/analyst/mine.md"},
		{"experimental/analyst/wild.md", "Be wild.", "experimental/analyst/wild.md"},
	} {
		got, src, err := l.System("analyst", tc.choice)
		if err != nil || got != tc.want || src != tc.source {
			t.Errorf("%q: %q from %s, %v", tc.choice, got, src, err)
		}
	}
	if _, err := New(builtin, filepath.Join(dir, "nope")); err == nil || !strings.Contains(err.Error(), "prompts directory") {
		t.Fatalf("missing dir: %v", err)
	}
	file := write(t, dir, "file.md", "x")
	if _, err := New(builtin, file); err == nil || !strings.Contains(err.Error(), "not a directory") {
		t.Fatalf("file as dir: %v", err)
	}
}

func TestUserFile(t *testing.T) {
	dir := t.TempDir()
	abs := write(t, dir, "my prompts/analyst.md", "Custom. {{include:shared/rules.md}}")
	l, _ := New(builtin, "")
	got, src, err := l.System("analyst", abs)
	if err != nil || got != "Custom. Rule one." || src != abs {
		t.Fatalf("absolute: %q %s %v", got, src, err)
	}
	// A relative path with a "/" that is not in the prompt root is a file
	// relative to the working directory.
	t.Chdir(dir)
	got, src, err = l.System("analyst", "my prompts/analyst.md")
	if err != nil || got != "Custom. Rule one." || src != "my prompts/analyst.md" {
		t.Fatalf("relative: %q %s %v", got, src, err)
	}
	loop := write(t, dir, "loop.md", "{{include:loop/a.md}}")
	if _, _, err := l.System("analyst", loop); err == nil || !strings.Contains(err.Error(), "include cycle: loop/a.md → loop/b.md") {
		t.Fatalf("cycle from a user file: %v", err)
	}
	_, _, err = l.System("analyst", "nosuch.md")
	if !errors.Is(err, ErrNotFound) || !strings.Contains(err.Error(), `analyst prompt "nosuch.md"`) {
		t.Fatalf("unknown name: %v", err)
	}
	if _, _, err := l.System("analyst", "./nowhere/x.md"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("unknown path: %v", err)
	}
}

func TestSystemPath(t *testing.T) {
	for choice, want := range map[string]string{
		"":                             "agents/reviewer/system.md",
		"strict.md":                    "agents/reviewer/strict.md",
		"experimental/reviewer/x.md":   "experimental/reviewer/x.md",
		"/home/me/prompts/reviewer.md": "/home/me/prompts/reviewer.md",
	} {
		if got := SystemPath("reviewer", choice); got != want {
			t.Errorf("%q → %q, want %q", choice, got, want)
		}
	}
}

// TestIncludesThatDouble: each level includes the next twice, so thirty
// levels would make a prompt of 2^30 copies; the expansion stops at
// MaxSize with an error naming the prompt.
func TestIncludesThatDouble(t *testing.T) {
	fsys := fstest.MapFS{}
	for i := range 30 {
		fsys[fmt.Sprintf("d/%d.md", i)] = &fstest.MapFile{Data: fmt.Appendf(nil, "{{include:d/%d.md}}{{include:d/%d.md}}", i+1, i+1)}
	}
	fsys["d/30.md"] = &fstest.MapFile{Data: []byte(strings.Repeat("x", 64<<10))}
	l, err := New(fsys, "")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := l.Load("d/0.md"); err == nil || !strings.Contains(err.Error(), "prompt d/0.md: longer than 1048576 bytes") {
		t.Fatalf("err %v", err)
	}
	// Below the limit the same shape loads.
	fsys["d/10.md"] = &fstest.MapFile{Data: []byte("x")}
	if text, err := l.Load("d/0.md"); err != nil || len(text) != 1024 {
		t.Fatalf("%d bytes, %v", len(text), err)
	}
}

// TestOverridesStayInTheirDirectory: a prompt override, or a file it
// includes, that is a symbolic link leading out of the prompts directory
// is an error, never the linked file's text; a link inside it is read.
func TestOverridesStayInTheirDirectory(t *testing.T) {
	top := t.TempDir()
	secret := write(t, top, "secret/.env", "OPENAI_API_KEY=sk-secret")
	dir := filepath.Join(top, "prompts")
	write(t, dir, "shared/rules.md", "Local rule.\n")
	write(t, dir, "agents/analyst/concise.md", "Short. {{include:shared/link.md}}")
	for link, target := range map[string]string{
		"agents/analyst/system.md": secret,
		"shared/link.md":           "../../secret/.env",
		"agents/analyst/inner.md":  "../../shared/rules.md",
	} {
		if err := os.Symlink(target, filepath.Join(dir, filepath.FromSlash(link))); err != nil {
			t.Fatal(err)
		}
	}
	l, err := New(builtin, dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"agents/analyst/system.md", "agents/analyst/concise.md"} {
		got, err := l.Load(name)
		if err == nil || strings.Contains(got, "sk-secret") || strings.Contains(err.Error(), "sk-secret") || !strings.Contains(err.Error(), "leads out of its directory") {
			t.Errorf("%s: %q, %v", name, got, err)
		}
	}
	if _, _, err := l.System("analyst", ""); err == nil {
		t.Error("the system prompt linked out of the directory was loaded")
	}
	if got, err := l.Load("agents/analyst/inner.md"); err != nil || got != "Local rule.\n" {
		t.Errorf("a link inside the directory: %q, %v", got, err)
	}
}
