package assess

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/madspark/madspark/llm"
)

var slugShape = regexp.MustCompile(`^[a-z0-9]+(-[a-z0-9]+)*$`)

func TestSlug(t *testing.T) {
	for in, want := range map[string]string{
		idea:                        "a-subscription-service-for-refurbished-lab",
		"../../etc/passwd":          "etc-passwd",
		"/absolute/path/to/x":       "absolute-path-to-x",
		`..\..\windows\system32`:    "windows-system32",
		"Café für Hunde":            "cafe-fur-hunde",
		"  Ünïcödé   ÀÇÇÉNTS  ":     "unicode-accents",
		"con":                       "con-idea",
		"3D-printed prosthetics, €": "3d-printed-prosthetics",
	} {
		if got := Slug(in); got != want {
			t.Errorf("Slug(%q) = %q, want %q", in, got, want)
		}
	}
	// Ideas with letters that have no ASCII form keep a hash, so they do
	// not collide; ideas with nothing left are "idea-<hash>".
	nonLatin := []string{"日本のラーメン店", "日本のカレー店", "AI для школ", "AI для больниц", "", "!!!", "..", "/", "\x00\x01"}
	seen := map[string]string{}
	for _, in := range nonLatin {
		s := Slug(in)
		if prev, ok := seen[s]; ok {
			t.Errorf("%q and %q share the slug %q", prev, in, s)
		}
		seen[s] = in
	}
	if s := Slug("AI для школ"); !strings.HasPrefix(s, "ai-") || len(s) != len("ai-")+8 {
		t.Errorf("partly Latin: %q", s)
	}
	if s := Slug("日本のラーメン店"); !strings.HasPrefix(s, "idea-") {
		t.Errorf("non-Latin: %q", s)
	}
	// Every slug is a safe, local, capped directory name.
	root := t.TempDir()
	for _, in := range append(nonLatin, strings.Repeat("word ", 40), strings.Repeat("x", 300), "a/../../b", "~/.ssh/id_rsa", "C:\\Windows", "-leading-and-trailing-", idea) {
		s := Slug(in)
		p := filepath.Join(root, "analyses", s)
		if !slugShape.MatchString(s) || len(s) > MaxSlugLen || !filepath.IsLocal(s) || filepath.Dir(p) != filepath.Join(root, "analyses") {
			t.Errorf("Slug(%q) = %q is not a safe directory name", in, s)
		}
	}
}

func TestSlugCollisionsAndReruns(t *testing.T) {
	dir := t.TempDir()
	h := newHarness(t, Config{Mock: true}, nil)
	ctx := context.Background()
	review := func(p *Params) { p.Mode = AnalyzeAndReview }

	// Two different ideas with the same slug, at the same time.
	ideas := []string{"Lab equipment, refurbished!", "lab-equipment refurbished"}
	slugs := make([]string, 2)
	var wg sync.WaitGroup
	for i, in := range ideas {
		wg.Add(1)
		go func() {
			defer wg.Done()
			res, _, err := h.run(ctx, params(dir, func(p *Params) { review(p); p.Idea = in }))
			if err != nil {
				t.Error(err)
				return
			}
			slugs[i] = res.Slug
		}()
	}
	wg.Wait()
	if slugs[0] == slugs[1] || !strings.HasPrefix(slugs[0], "lab-equipment-refurbished") || !strings.HasPrefix(slugs[1], "lab-equipment-refurbished") {
		t.Fatalf("slugs %v", slugs)
	}
	for i, s := range slugs {
		if meta := readJSON[Metadata](t, filepath.Join(dir, "analyses", s, "metadata.json")); meta.Idea != ideas[i] {
			t.Fatalf("%s holds %q, want %q", s, meta.Idea, ideas[i])
		}
	}

	// Rerunning an idea reuses its directory; the earlier run moves to
	// history/, whole.
	first := readJSON[Metadata](t, filepath.Join(dir, "analyses", slugs[0], "metadata.json"))
	res, _, err := h.run(ctx, params(dir, func(p *Params) { p.Idea = ideas[0] }))
	if err != nil {
		t.Fatal(err)
	}
	if res.Slug != slugs[0] {
		t.Fatalf("rerun went to %s, not %s", res.Slug, slugs[0])
	}
	entries, _ := filepath.Glob(filepath.Join(dir, "analyses", slugs[0], "history", "*"))
	if len(entries) != 1 || !strings.HasSuffix(entries[0], first.RunID[len(first.RunID)-8:]) {
		t.Fatalf("history %v", entries)
	}
	old := readJSON[Metadata](t, filepath.Join(entries[0], "metadata.json"))
	if old.RunID != first.RunID || len(old.Iterations) != 2 {
		t.Fatalf("archived metadata %+v", old)
	}
	if _, err := os.Stat(filepath.Join(entries[0], "iterations", "iteration_2.md")); err != nil {
		t.Fatal(err)
	}
	// The new run is an analyze-only run: one iteration, no stale second
	// one beside it.
	if _, err := os.Stat(filepath.Join(dir, "analyses", slugs[0], "iterations", "iteration_2.md")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("stale iteration_2.md: %v", err)
	}
	noTempFiles(t, dir)
}

func TestAnalysisLinkFallsBackToCopy(t *testing.T) {
	dir := t.TempDir()
	noLinks := func(string, string) error { return errors.New("symbolic links are not supported here") }
	h := newHarness(t, Config{Mock: true, Symlink: noLinks}, nil)
	res, _, err := h.run(context.Background(), params(dir, func(p *Params) { p.Mode = AnalyzeAndReview }))
	if err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "analyses", res.Slug, "analysis.md")
	st, err := os.Lstat(link)
	if err != nil || st.Mode()&os.ModeSymlink != 0 {
		t.Fatalf("analysis.md: %v %v", st, err)
	}
	if b, _ := os.ReadFile(link); strings.TrimSpace(string(b)) != res.Iterations[1].Analysis {
		t.Fatal("analysis.md is not a copy of the latest iteration")
	}
	noTempFiles(t, dir)
}

// TestInterruptedRun cancels a run while the reviewer is working: the run
// fails, the finished iteration's files are whole, metadata.json says
// failed, and no temporary file is left.
func TestInterruptedRun(t *testing.T) {
	dir := t.TempDir()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	h := newHarness(t, Config{Mock: true}, nil)
	next := h.cnt.Next
	h.cnt.Next = llm.ClientFunc(func(c context.Context, req *llm.Request) (*llm.Response, error) {
		if req.Agent == agentReviewer {
			cancel()
			<-c.Done()
			return nil, c.Err()
		}
		return next.Generate(c, req)
	})
	_, _, err := h.run(ctx, params(dir, func(p *Params) { p.Mode = AnalyzeAndReview }))
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v", err)
	}
	slugDir := filepath.Join(dir, "analyses", Slug(idea))
	meta := readJSON[Metadata](t, filepath.Join(slugDir, "metadata.json"))
	if meta.Status != "failed" || len(meta.Iterations) != 1 {
		t.Fatalf("metadata %+v", meta)
	}
	if b, err := os.ReadFile(filepath.Join(slugDir, "analysis.md")); err != nil || CountWords(string(b)) < 800 {
		t.Fatalf("analysis.md: %v", err)
	}
	noTempFiles(t, dir)
}

func TestPrompts(t *testing.T) {
	override := t.TempDir()
	write := func(name, text string) string {
		p := filepath.Join(override, filepath.FromSlash(name))
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	base := params(t.TempDir(), func(p *Params) { p.Mode = AnalyzeAndReview })
	if err := CheckPrompts(base); err != nil {
		t.Fatalf("built-in prompts: %v", err)
	}

	// A name under agents/analyst/, a path from the prompt root, a user's file.
	custom := write("mine/analyst.md", "You analyse ideas for a family office. {{include:shared/sections.md}}")
	for choice, want := range map[string]string{
		"experimental/analyst/concise.md": "tight, numbers-first analyses",
		custom:                            "for a family office",
	} {
		h := newHarness(t, Config{Mock: true}, nil)
		p := base
		p.AnalystPrompt, p.OutputDir = choice, t.TempDir()
		res, _, err := h.run(context.Background(), p)
		if err != nil {
			t.Fatalf("%s: %v", choice, err)
		}
		sys := h.cnt.Of(agentAnalyst)[0].System
		if !strings.Contains(sys, want) || !strings.Contains(sys, "Key Risks & Mitigation") {
			t.Errorf("%s: system prompt %q", choice, sys)
		}
		meta := readJSON[Metadata](t, filepath.Join(p.OutputDir, "analyses", res.Slug, "metadata.json"))
		if meta.Prompts["analyst"] != choice || meta.Prompts["reviewer"] != "agents/reviewer/system.md" {
			t.Errorf("metadata prompts %v", meta.Prompts)
		}
	}

	// The override directory shadows single files, also included ones.
	write("agents/reviewer/tough.md", "You are tough. Strictness {{.Strictness}}. {{include:shared/extra.md}}")
	write("shared/extra.md", "Never approve a first draft.")
	h := newHarness(t, Config{Mock: true}, nil)
	p := base
	p.PromptsDir, p.ReviewerPrompt, p.OutputDir = override, "tough.md", t.TempDir()
	if _, _, err := h.run(context.Background(), p); err != nil {
		t.Fatal(err)
	}
	if sys := h.cnt.Of(agentReviewer)[0].System; sys != "You are tough. Strictness normal. Never approve a first draft." {
		t.Errorf("reviewer system prompt %q", sys)
	}

	// Errors, before any call.
	write("shared/a.md", "{{include:shared/b.md}}")
	write("shared/b.md", "{{include:shared/a.md}}")
	write("agents/analyst/loop.md", "x {{include:shared/a.md}}")
	write("agents/analyst/missing.md", "x {{include:shared/nowhere.md}}")
	write("agents/analyst/badfield.md", "x {{.Budget}}")
	write("agents/analyst/broken.md", "x {{if}}")
	for choice, want := range map[string]string{
		"loop.md":     "include cycle: shared/a.md → shared/b.md → shared/a.md",
		"missing.md":  "include shared/nowhere.md: not found",
		"badfield.md": "Budget",
		"broken.md":   "assess.analyst",
		"nosuch.md":   `analyst prompt "nosuch.md": not found`,
	} {
		p := base
		p.PromptsDir, p.AnalystPrompt = override, choice
		if err := CheckPrompts(p); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want %q", choice, err, want)
		}
	}
	p = base
	p.PromptsDir = filepath.Join(override, "nope")
	if err := CheckPrompts(p); err == nil || !strings.Contains(err.Error(), "prompts directory") {
		t.Errorf("missing prompts dir: %v", err)
	}
}

func TestParseIdeas(t *testing.T) {
	in := "\ufeff# Ideas for Q3\n\nA plain line idea\n- A dash list idea\n* A star idea\n1. A numbered idea\n2) Another numbered idea\n" +
		"- [ ] A checkbox idea\n> a quote\n<!-- a comment -->\n---\n```\nnot an idea\n```\n  a plain line IDEA  \n\n## More\n+ Plus idea\n"
	ideas, dups, err := ParseIdeas(strings.NewReader(in))
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, i := range ideas {
		got = append(got, fmt.Sprintf("%d:%s", i.Line, i.Idea))
	}
	want := []string{"3:A plain line idea", "4:A dash list idea", "5:A star idea", "6:A numbered idea", "7:Another numbered idea", "8:A checkbox idea", "18:Plus idea"}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Fatalf("ideas %v\nwant  %v", got, want)
	}
	if len(dups) != 1 || dups[0].Line != 15 {
		t.Fatalf("dups %+v", dups)
	}
	if _, _, err := ParseIdeas(strings.NewReader("ok idea\n- " + strings.Repeat("x", MaxIdeaLen+1) + "\n")); err == nil || !strings.Contains(err.Error(), "line 2") {
		t.Fatalf("long idea: %v", err)
	}
}

// TestReviewerAndFactCheckerRunSideBySide holds each of the two calls until
// the other has arrived: run one after the other, they would time out.
func TestReviewerAndFactCheckerRunSideBySide(t *testing.T) {
	h := newHarness(t, Config{Mock: true}, nil)
	next := h.cnt.Next
	var wg sync.WaitGroup
	wg.Add(2)
	both := make(chan struct{})
	go func() { wg.Wait(); close(both) }()
	var once sync.Map
	h.cnt.Next = llm.ClientFunc(func(ctx context.Context, req *llm.Request) (*llm.Response, error) {
		if req.Agent == agentReviewer || req.Agent == agentFactChecker {
			if _, seen := once.LoadOrStore(req.Agent, true); !seen {
				wg.Done()
				select {
				case <-both:
				case <-time.After(5 * time.Second):
					return nil, fmt.Errorf("%s waited alone: the reviewers do not run side by side", req.Agent)
				}
			}
		}
		return next.Generate(ctx, req)
	})
	if _, _, err := h.run(context.Background(), params(t.TempDir(), func(p *Params) { p.Mode, p.FactCheck = AnalyzeAndReview, true })); err != nil {
		t.Fatal(err)
	}
}

func TestWriterOrderAndErrors(t *testing.T) {
	w := newWriter()
	var mu sync.Mutex
	var order []string
	block := make(chan struct{})
	op := func(name string, wait bool) func() error {
		return func() error {
			if wait {
				<-block
			}
			mu.Lock()
			order = append(order, name)
			mu.Unlock()
			return nil
		}
	}
	w.enqueue("a", op("a1", true)) // holds the writer until block closes
	w.enqueue("b", op("b1", false))
	w.enqueue("c", op("c1", false))
	w.enqueue("b", op("b2", false)) // replaces b1, after c
	close(block)
	if err := w.flush(); err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(order, " "); got != "a1 c1 b2" {
		t.Fatalf("written %s, want a1 c1 b2", got)
	}
	w.enqueue("x", func() error { return errors.New("disk full") })
	w.enqueue("y", op("y", false))
	if err := w.flush(); err == nil || err.Error() != "disk full" || w.failed() == nil {
		t.Fatalf("flush %v", err)
	}
	if order[len(order)-1] != "y" {
		t.Fatal("a failed write stopped the ones after it")
	}
}

// TestWriterSettled checks that settled waits for the files given before
// its mark, and only for those.
func TestWriterSettled(t *testing.T) {
	w := newWriter()
	first, second := make(chan struct{}), make(chan struct{})
	w.enqueue("a", func() error { <-first; return nil })
	m := w.mark()
	w.enqueue("b", func() error { <-second; return nil })
	done := make(chan error, 1)
	go func() { done <- w.settled(m) }()
	select {
	case err := <-done:
		t.Fatalf("settled returned %v while a file before the mark was being written", err)
	case <-time.After(20 * time.Millisecond):
	}
	close(first)
	if err := <-done; err != nil { // returns with b still blocked
		t.Fatal(err)
	}
	close(second)
	if err := w.flush(); err != nil {
		t.Fatal(err)
	}
	w.enqueue("c", func() error { return errors.New("disk full") })
	if err := w.settled(w.mark()); err == nil || err.Error() != "disk full" {
		t.Fatalf("settled after a failed write: %v", err)
	}
}

// TestWriteFailureStopsTheRun makes the iteration file impossible to write
// (a file stands where iterations/ should be): the run fails naming it
// before the reviewer is paid for.
func TestWriteFailureStopsTheRun(t *testing.T) {
	dir := t.TempDir()
	h := newHarness(t, Config{Mock: true}, nil)
	next := h.cnt.Next
	h.cnt.Next = llm.ClientFunc(func(ctx context.Context, req *llm.Request) (*llm.Response, error) {
		if req.Agent == agentAnalyst {
			if err := os.WriteFile(filepath.Join(dir, "analyses", Slug(idea), "iterations"), nil, 0o644); err != nil {
				t.Error(err)
			}
		}
		return next.Generate(ctx, req)
	})
	_, _, err := h.run(context.Background(), params(dir, func(p *Params) { p.Mode = AnalyzeAndReview }))
	if err == nil || !strings.Contains(err.Error(), "iteration_1.md") {
		t.Fatalf("err = %v", err)
	}
	if n := len(h.cnt.Of(agentReviewer)); n > 1 {
		t.Fatalf("%d reviewer calls after the write failed", n)
	}
	meta := readJSON[Metadata](t, filepath.Join(dir, "analyses", Slug(idea), "metadata.json"))
	if meta.Status != "failed" || !strings.Contains(meta.Error, "iteration_1.md") {
		t.Fatalf("metadata %+v", meta)
	}
}
