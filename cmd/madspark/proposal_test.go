package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/madspark/madspark/document/pdf/pdftest"
)

// invokeWithStdin runs the CLI in-process reading stdin.
func invokeWithStdin(t *testing.T, vars map[string]string, stdin string, args ...string) result {
	t.Helper()
	var out, errb bytes.Buffer
	code := run(context.Background(), args, func(k string) string { return vars[k] }, strings.NewReader(stdin), &out, &errb)
	return result{code, out.String(), errb.String()}
}

// tightProfile has 4 hours a week for 6 months: too few for the first data
// plan, so quality control sends it back once.
const tightProfile = `academic_program: Master's
field_of_study: Education
research_area: peer tutoring in secondary schools
weekly_hours: 4
total_timeline: {value: 6, unit: months}
existing_skills: [surveys]
missing_skills: [statistics]
constraints: [no travel budget]
additional_context: Études en français avec l'école partenaire de Łódź.
`

func writeProfile(t *testing.T, name, text string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

type proposalEnvelope struct {
	RunID     string            `json:"run_id"`
	Pipeline  string            `json:"pipeline"`
	Mode      string            `json:"mode"`
	Notice    string            `json:"notice"`
	OutputDir string            `json:"output_dir"`
	Files     map[string]string `json:"files"`
	Result    struct {
		Title       string `json:"title"`
		Passed      bool   `json:"passed_quality_control"`
		Refinements int    `json:"refinements"`
		Problem     struct {
			Literature []struct {
				Title string `json:"title"`
				URL   string `json:"url"`
			} `json:"preliminary_literature"`
		} `json:"problem_definition"`
		Transitions []struct {
			To string `json:"to"`
		} `json:"transitions"`
	} `json:"result"`
	Usage struct {
		LLMCalls    int `json:"llm_calls"`
		CachedCalls int `json:"cached_calls"`
	} `json:"usage"`
}

// TestProposalFromProfile runs the mock end to end from a profile file
// through one refinement, and reads the PDF it wrote.
func TestProposalFromProfile(t *testing.T) {
	env := mockEnv(t)
	dir := filepath.Join(t.TempDir(), "out")
	r := invoke(t, env, "proposal", "--profile", writeProfile(t, "me.yaml", tightProfile), "--output-dir", dir, "--output-format", "json")
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	var env1 proposalEnvelope
	if err := json.Unmarshal([]byte(r.stdout), &env1); err != nil {
		t.Fatalf("stdout is not JSON: %v\n%s", err, r.stdout)
	}
	res := env1.Result
	if env1.Pipeline != "proposal" || env1.Mode != "mock" || !strings.HasPrefix(env1.Notice, "MOCK DATA") || !res.Passed || res.Refinements != 1 || env1.Usage.LLMCalls != 9 {
		t.Fatalf("envelope %+v", env1)
	}
	if n := len(res.Transitions); n == 0 || res.Transitions[n-1].To != "COMPLETE" {
		t.Errorf("transitions %+v", res.Transitions)
	}
	// The files: JSON as printed, Markdown and PDF of the same content.
	js, err := os.ReadFile(filepath.Join(dir, "proposal.json"))
	if err != nil || string(js) != r.stdout {
		t.Errorf("proposal.json differs from stdout: %v", err)
	}
	md, err := os.ReadFile(filepath.Join(dir, "proposal.md"))
	if err != nil || !strings.Contains(string(md), "MOCK DATA") || !strings.Contains(string(md), "## Appendix A: Quality control") {
		t.Errorf("proposal.md: %v", err)
	}
	pdfPath := filepath.Join(dir, "proposal.pdf")
	pages := pdftest.PageCount(t, pdfPath)
	if pages < 5 || pages > 12 {
		t.Errorf("%d pages", pages)
	}
	text := pdftest.Text(t, pdfPath)
	for _, want := range []string{
		res.Title, "Research proposal", "Contents", "1 Research problem", "2 Literature review", "3 Objectives", "4 Methodology",
		"5 Data collection plan", "Appendix A: Quality control", "Appendix B: Researcher profile",
		"Études en français avec l'école partenaire de Łódź.", "MOCK DATA", "Refinement history",
		fmt.Sprintf("Page %d of %d", pages, pages),
	} {
		if !strings.Contains(text, want) {
			t.Errorf("PDF text lacks %q", want)
		}
	}
	for _, e := range res.Problem.Literature {
		if !strings.Contains(text, pdftest.Flat(e.Title)) {
			t.Errorf("PDF lacks the cited %q", e.Title)
		}
		if raw, _ := os.ReadFile(pdfPath); !bytes.Contains(raw, []byte("/URI ("+e.URL+")")) {
			t.Errorf("PDF does not link %s", e.URL)
		}
	}

	// The same profile again: every LLM call is answered by the cache.
	again := invoke(t, env, "proposal", "--profile", writeProfile(t, "me.yaml", tightProfile), "--output-dir", dir, "--output-format", "json")
	var env2 proposalEnvelope
	if again.code != 0 || json.Unmarshal([]byte(again.stdout), &env2) != nil || env2.Usage.LLMCalls != 0 || env2.Usage.CachedCalls != 9 {
		t.Errorf("cached re-run: exit %d, usage %+v", again.code, env2.Usage)
	}
	list := invoke(t, env, "runs", "list", "--pipeline", "proposal")
	if list.code != 0 || !strings.Contains(list.stdout, env1.RunID) {
		t.Errorf("runs list: %+v", list)
	}
}

// TestProposalInterview answers the interview from a scripted stdin, with
// a bad answer that is asked again.
func TestProposalInterview(t *testing.T) {
	env := mockEnv(t)
	dir := filepath.Join(t.TempDir(), "out")
	script := "Master's\nComputer Science\nfederated learning on phones\nlots\n15\n1 year\nPython\n\n\n\n"
	r := invokeWithStdin(t, env, script, "proposal", "--output-dir", dir, "--no-search")
	if r.code != 0 {
		t.Fatalf("exit %d: %s\n%s", r.code, r.stderr, r.stdout)
	}
	for _, s := range []string{"[1/9] Which academic programme", "[4/9] How many hours", `✗ Give a whole number of hours, such as 10, got "lots"`,
		"[9/9]", "Quality control: PASSED", "5 LLM calls", "Files: " + filepath.Join(dir, "proposal.pdf")} {
		if !strings.Contains(r.stdout, s) {
			t.Errorf("stdout lacks %q:\n%s", s, r.stdout)
		}
	}
	if n := strings.Count(r.stdout, "[4/9]"); n != 2 {
		t.Errorf("the hours question was asked %d times, want 2", n)
	}
	for _, f := range []string{"proposal.pdf", "proposal.md", "proposal.json"} {
		if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
			t.Errorf("%s: %v", f, err)
		}
	}
	// With JSON output the questions go to stderr, so stdout is only JSON.
	j := invokeWithStdin(t, env, script, "proposal", "--output-dir", dir, "--no-search", "--output-format", "json")
	if j.code != 0 || !json.Valid([]byte(j.stdout)) || !strings.Contains(j.stderr, "[1/9]") {
		t.Errorf("json: exit %d, stdout valid %v", j.code, json.Valid([]byte(j.stdout)))
	}
}

// TestProposalInterviewEndsEarly: stdin ends mid-interview, so the command
// exits 2, naming the unanswered question, having written nothing and
// called nothing.
func TestProposalInterviewEndsEarly(t *testing.T) {
	env := mockEnv(t)
	tmp := t.TempDir()
	t.Chdir(tmp)
	r := invokeWithStdin(t, env, "Master's\nBiology\n", "proposal")
	if r.code != 2 || !strings.Contains(r.stderr, "interview ended before research_area was answered: nothing was written") {
		t.Fatalf("exit %d, stderr %q", r.code, r.stderr)
	}
	if entries, _ := os.ReadDir(tmp); len(entries) != 0 {
		t.Errorf("files were written: %v", entries)
	}
	if _, err := os.Stat(env["MADSPARK_DB"]); err == nil {
		list := invoke(t, env, "runs", "list", "--pipeline", "proposal")
		if strings.Contains(list.stdout, "proposal") {
			t.Errorf("a run was recorded: %s", list.stdout)
		}
	}
}

func TestProposalBadInput(t *testing.T) {
	env := mockEnv(t)
	bad := writeProfile(t, "bad.yaml", strings.Replace(tightProfile, "weekly_hours: 4", "weekly_hour: 4", 1))
	tooLong := writeProfile(t, "long.json", `{"academic_program":"M","field_of_study":"F","research_area":"R","weekly_hours":500,"total_timeline":"6 months"}`)
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"proposal", "--profile", bad}, `profile bad.yaml: unknown field "weekly_hour"`},
		{[]string{"proposal", "--profile", tooLong}, "profile long.json: weekly_hours must be a whole number of hours from 1 to 80, got 500"},
		{[]string{"proposal", "--profile", filepath.Join(t.TempDir(), "none.yaml")}, "none.yaml: no such file or directory"},
		{[]string{"proposal", "--max-refinements", "11", "--profile", bad}, "--max-refinements must be 0..10, got 11"},
		{[]string{"proposal", "--output-format", "pdf"}, `unknown output format "pdf"`},
		{[]string{"proposal", "--timeout", "0s"}, "--timeout must be positive"},
		{[]string{"proposal", "topic"}, `unknown command "topic"`},
	} {
		r := invoke(t, env, tt.args...)
		if r.code != 2 || !strings.Contains(r.stderr, tt.want) || strings.Count(strings.TrimSpace(r.stderr), "\n") > 0 {
			t.Errorf("%v: exit %d, stderr %q", tt.args, r.code, r.stderr)
		}
	}
}

// TestProposalCJK writes a proposal whose research area is in Chinese: the
// bundled fonts lack the ideographs, so the PDF shows � for them unless
// MADSPARK_PDF_FONT names a font that has them; the Markdown keeps them
// either way.
func TestProposalCJK(t *testing.T) {
	const font = "/usr/share/fonts/truetype/droid/DroidSansFallbackFull.ttf"
	if _, err := os.Stat(font); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("%v: .ci/run installs fonts-droid-fallback", err)
		}
		t.Skipf("no CJK font to test with (Debian: apt-get install fonts-droid-fallback): %v", err)
	}
	profile := writeProfile(t, "cjk.yaml", strings.Replace(tightProfile, "research_area: peer tutoring in secondary schools", "research_area: 同伴辅导 peer tutoring", 1))
	env := mockEnv(t)
	dir := filepath.Join(t.TempDir(), "plain")
	if r := invoke(t, env, "proposal", "--profile", profile, "--output-dir", dir); r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	if text := pdftest.Text(t, filepath.Join(dir, "proposal.pdf")); strings.Contains(text, "同伴辅导") || !strings.Contains(text, "���� peer tutoring") {
		t.Errorf("without a CJK font the ideographs should show as �")
	}
	if md, _ := os.ReadFile(filepath.Join(dir, "proposal.md")); !strings.Contains(string(md), "同伴辅导 peer tutoring") {
		t.Error("the Markdown lost the ideographs")
	}
	env["MADSPARK_PDF_FONT"] = font
	dir = filepath.Join(t.TempDir(), "cjk")
	if r := invoke(t, env, "proposal", "--profile", profile, "--output-dir", dir); r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	text := pdftest.Text(t, filepath.Join(dir, "proposal.pdf"))
	if !strings.Contains(text, "同伴辅导 peer tutoring") || strings.Contains(text, "�") {
		t.Errorf("with MADSPARK_PDF_FONT the ideographs should be drawn")
	}
	// A font that is not TrueType is refused before any call.
	env["MADSPARK_PDF_FONT"] = profile
	if r := invoke(t, env, "proposal", "--profile", profile); r.code != 2 || !strings.Contains(r.stderr, "MADSPARK_PDF_FONT") {
		t.Errorf("bad font: exit %d, %s", r.code, r.stderr)
	}
}
