package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/madspark/madspark/document/pdf/pdftest"
	"github.com/madspark/madspark/llm"
	"github.com/madspark/madspark/pipeline/proposal"
	"github.com/madspark/madspark/provider/openai/openaitest"
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
			WorkingTitle string `json:"working_title"`
			Literature   []struct {
				Title string `json:"title"`
				URL   string `json:"url"`
			} `json:"preliminary_literature"`
		} `json:"problem_definition"`
		Objectives struct {
			SpecificObjectives []proposal.SpecificObjective `json:"specific_objectives"`
		} `json:"research_objectives"`
		Methodology proposal.MethodologyRecommendation `json:"methodology"`
		Data        proposal.DataCollectionPlan        `json:"data_collection_plan"`
		QC          proposal.QualityValidation         `json:"quality_validation"`
		Transitions []struct {
			To string `json:"to"`
		} `json:"transitions"`
		FailedStep string       `json:"failed_step"`
		Repairs    []llm.Repair `json:"repairs"`
	} `json:"result"`
	Repairs []llm.Repair `json:"repairs"`
	Usage   struct {
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
		{[]string{"proposal", "--profile", filepath.Join(t.TempDir(), "none.yaml")}, "none.yaml: no such file"},
		{[]string{"proposal", "--max-refinements", "11", "--profile", bad}, "--max-refinements must be 0..10, got 11"},
		{[]string{"proposal", "--output-format", "pdf"}, `unknown output format "pdf"`},
		{[]string{"proposal", "--timeout", "0s"}, "--timeout must be positive"},
		{[]string{"proposal", "topic"}, `proposal takes no argument, got "topic"`},
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

// liveProposalReply answers the proposal's agents the way a model would,
// from the json_schema name of the wire request. The problem agent's reply
// comes in a markdown fence, as some models send it.
func liveProposalReply(req *openaitest.ChatRequest) openaitest.Reply {
	if req.ResponseFormat == nil || req.ResponseFormat.JSONSchema == nil {
		return openaitest.Reply{Content: "no schema was sent"}
	}
	var v any
	fence := false
	switch req.ResponseFormat.JSONSchema.Name {
	case "proposal_problem_definition":
		fence = true
		v = map[string]any{"working_title": "Live tutoring study", "problem_statement": "Peer tutoring outcomes are unclear in small schools.",
			"research_gap": "Few studies follow one school.", "justification": "Schools need evidence.", "main_research_question": "Does peer tutoring raise maths scores?",
			"secondary_questions": []string{"Who benefits most?"}, "key_variables": []string{"maths score"}, "preliminary_literature": []any{}, "search_summary": ""}
	case "proposal_research_objectives":
		so := func(i int, rq string, week int) map[string]any {
			return map[string]any{"id": fmt.Sprintf("SO%d", i), "objective": "Objective " + fmt.Sprint(i), "research_question": rq, "indicator": "a measure", "due_week": week}
		}
		v = map[string]any{"general_objective": "Measure the effect of peer tutoring.", "specific_objectives": []any{so(1, "RQ1", 8), so(2, "RQ2", 16), so(3, "RQ1", 24)},
			"alignment_check": map[string]any{"verdict": "aligned", "explanation": "All questions covered."}, "feasibility_notes": "Fits."}
	case "proposal_methodology":
		v = map[string]any{"recommended_methodology": "A quasi-experiment in two classes.", "methodology_type": "quantitative", "justification": "It measures the effect.",
			"required_skills": []string{"statistics"}, "timeline_fit": map[string]any{"verdict": "fits", "phases": []any{map[string]any{"name": "Set-up", "weeks": 6}, map[string]any{"name": "Study", "weeks": 16}}, "explanation": "22 of 26 weeks."},
			"alternative_methodologies": []any{map[string]any{"name": "Case study", "methodology_type": "qualitative", "pros": []string{"depth"}, "cons": []string{"no effect size"}, "why_not_chosen": "The question asks for an effect."}}}
	case "proposal_data_collection_plan":
		v = map[string]any{"collection_techniques": []string{"tests"}, "recommended_tools": []any{map[string]any{"name": "R", "purpose": "analysis", "access": "free"}},
			"data_sources": []string{"school records"}, "estimated_sample_size": "60 pupils", "sampling_strategy": "two intact classes",
			"timeline_breakdown":    []any{map[string]any{"phase": "Testing", "start_week": 6, "end_week": 22, "description": "Pre and post tests."}},
			"resource_requirements": []string{"school access"}, "ethical_considerations": []string{"parental consent"}}
	case "proposal_quality_validation":
		v = map[string]any{"coherence_score": 0.86, "feasibility_score": 0.8, "issues_identified": []any{}, "recommendations": []string{}, "refinement_targets": []string{}, "summary": "Sound."}
	default:
		return openaitest.Reply{Content: "unexpected schema " + req.ResponseFormat.JSONSchema.Name}
	}
	b, _ := json.Marshal(v)
	text := string(b)
	if fence {
		text = "```json\n" + text + "\n```"
	}
	return openaitest.Reply{Content: text, PromptTokens: 200, CompletionTokens: 80}
}

// TestProposalLiveOpenAICompatible runs the proposal against the in-process
// OpenAI wire fake: every stage sends its schema natively and receives the
// outputs of the stages before it.
func TestProposalLiveOpenAICompatible(t *testing.T) {
	srv := openaitest.NewServer(t, liveProposalReply)
	env := map[string]string{
		"OPENAI_BASE_URL": srv.URL, "OPENAI_API_KEY": "sk-test-secret-123", "MADSPARK_MODEL": "gpt-4o-mini",
		"MADSPARK_DB": filepath.Join(t.TempDir(), "m.db"),
	}
	profile := writeProfile(t, "me.json", `{"academic_program":"Master's","field_of_study":"Education","research_area":"peer tutoring",
		"weekly_hours":10,"total_timeline":"6 months"}`)
	dir := filepath.Join(t.TempDir(), "out")
	r := invoke(t, env, "proposal", "--profile", profile, "--no-search", "--output-dir", dir, "--output-format", "json")
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	var e proposalEnvelope
	if err := json.Unmarshal([]byte(r.stdout), &e); err != nil || e.Mode != "live" || e.Notice != "" || !e.Result.Passed || e.Usage.LLMCalls != 5 {
		t.Fatalf("envelope %+v (%v)", e, err)
	}
	reqs := srv.Requests()
	if len(reqs) != 5 {
		t.Fatalf("%d requests", len(reqs))
	}
	// Each stage's prompt carries what it depends on.
	for i, want := range []string{"peer tutoring", "Does peer tutoring raise maths scores?", "SO2 (answers RQ2, due week 16)", "A quasi-experiment in two classes.", "60 pupils"} {
		if !strings.Contains(reqs[i].Prompt(), want) {
			t.Errorf("request %d (%s) lacks %q", i, reqs[i].ResponseFormat.JSONSchema.Name, want)
		}
	}
	if text := pdftest.Text(t, filepath.Join(dir, "proposal.pdf")); !strings.Contains(text, "Live tutoring study") || strings.Contains(text, "MOCK") {
		t.Error("the live PDF is wrong")
	}

	// A provider that fails mid-run: exit 1, the run kept as failed, the
	// stages before the failed step written, marked incomplete.
	bad := openaitest.NewServer(t, func(req *openaitest.ChatRequest) openaitest.Reply {
		if req.ResponseFormat.JSONSchema.Name == "proposal_methodology" {
			return openaitest.Reply{Fault: &openaitest.Fault{Status: 401, Message: "Incorrect API key provided"}}
		}
		return liveProposalReply(req)
	})
	env["OPENAI_BASE_URL"] = bad.URL
	dir2 := filepath.Join(t.TempDir(), "out2")
	f := invoke(t, env, "proposal", "--profile", profile, "--no-search", "--no-cache", "--output-dir", dir2)
	if f.code != 1 || !strings.Contains(f.stderr, "proposal.methodology") || strings.Contains(f.stderr, "secret") {
		t.Errorf("exit %d, stderr %q", f.code, f.stderr)
	}
	if !strings.Contains(f.stderr, "the step r0/methodology failed; the stages before it are in "+dir2) {
		t.Errorf("stderr does not say which step failed: %q", f.stderr)
	}
	var partial proposalEnvelope
	b, err := os.ReadFile(filepath.Join(dir2, "proposal.json"))
	if err != nil || json.Unmarshal(b, &partial) != nil || partial.Result.FailedStep != "r0/methodology" ||
		partial.Result.Problem.WorkingTitle != "Live tutoring study" || len(partial.Result.Objectives.SpecificObjectives) != 3 ||
		!strings.Contains(partial.Notice, "INCOMPLETE") {
		t.Errorf("partial proposal.json: %v %s", err, b)
	}
	list := invoke(t, env, "runs", "list", "--pipeline", "proposal", "--status", "failed")
	if !strings.Contains(list.stdout, "failed") {
		t.Errorf("failed run not recorded: %s", list.stdout)
	}
}

// TestProposalEndToEndWithImperfectReplies runs a proposal through the CLI
// against a model whose agents answer imperfectly but usably: a citation
// with no search results, objective ids that are not SO1..SOn, phases
// longer than the project, an activity past its end, and a failing review
// that names no stage to refine. The run succeeds and its JSON lists every
// repair.
func TestProposalEndToEndWithImperfectReplies(t *testing.T) {
	unfenced := func(req *openaitest.ChatRequest) openaitest.Reply {
		r := liveProposalReply(req)
		r.Content = strings.TrimSuffix(strings.TrimPrefix(r.Content, "```json\n"), "\n```")
		return r
	}
	server := func() *openaitest.Server {
		return openaitest.NewServer(t, openaitest.Imperfect(unfenced, map[string][]openaitest.Flaw{
			"proposal_problem_definition":   {openaitest.Set("preliminary_literature", []any{map[string]any{"id": 1, "relevance_note": "x"}})},
			"proposal_research_objectives":  {openaitest.Set("specific_objectives/*/id", "SO-1")},
			"proposal_methodology":          {openaitest.Set("timeline_fit/phases/1/weeks", 24)},
			"proposal_data_collection_plan": {openaitest.Set("timeline_breakdown/0/end_week", 30)},
			"proposal_quality_validation":   {openaitest.Set("feasibility_score", 0.4), openaitest.Set("recommendations", []string{"Trim the scope."}), openaitest.Delete("refinement_targets")},
		}))
	}
	env := map[string]string{"OPENAI_BASE_URL": server().URL, "OPENAI_API_KEY": "sk-test", "MADSPARK_DB": filepath.Join(t.TempDir(), "m.db")}
	profile := writeProfile(t, "me.json", `{"academic_program":"Master's","field_of_study":"Education","research_area":"peer tutoring",
		"weekly_hours":10,"total_timeline":"6 months"}`)
	dir := filepath.Join(t.TempDir(), "out")
	r := invoke(t, env, "proposal", "--profile", profile, "--no-search", "--max-refinements", "0", "--output-dir", dir, "--output-format", "json")
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	var e proposalEnvelope
	if err := json.Unmarshal([]byte(r.stdout), &e); err != nil {
		t.Fatal(err)
	}
	res := e.Result
	phases := res.Methodology.TimelineFit.Phases
	if len(res.Problem.Literature) != 0 || res.Objectives.SpecificObjectives[2].ID != "SO3" || phases[0].Weeks+phases[1].Weeks != 26 ||
		res.Data.TimelineBreakdown[0].EndWeek != 26 || res.Passed || len(res.QC.RefinementTargets) != 1 || res.QC.RefinementTargets[0] != proposal.StageProblem {
		t.Fatalf("result %+v", res)
	}
	want := map[string]bool{"proposal.problem reference": false, "proposal.objectives id": false, "proposal.methodology budget": false,
		"proposal.data budget": false, "proposal.qc consistency": false}
	for _, rep := range e.Repairs {
		want[rep.Agent+" "+rep.Rule] = true
	}
	for k, seen := range want {
		if !seen {
			t.Errorf("no %s repair in %+v", k, e.Repairs)
		}
	}
	if len(res.Repairs) != len(e.Repairs) || e.Usage.LLMCalls != 5 {
		t.Errorf("the result holds %d repairs, the output %d; %d calls", len(res.Repairs), len(e.Repairs), e.Usage.LLMCalls)
	}
	// The text summary counts them.
	env["MADSPARK_DB"], env["OPENAI_BASE_URL"] = filepath.Join(t.TempDir(), "m2.db"), server().URL
	txt := invoke(t, env, "proposal", "--profile", profile, "--no-search", "--max-refinements", "0", "--output-dir", filepath.Join(t.TempDir(), "o2"), "--no-cache")
	if txt.code != 0 || !strings.Contains(txt.stdout, fmt.Sprintf("; %d repairs", len(e.Repairs))) {
		t.Errorf("exit %d, summary without the repairs count:\n%s", txt.code, txt.stdout)
	}
}

// TestProposalQualityControlFailureResumes: a review with nothing usable in
// it, twice, fails the run at quality control; the stages before it are
// written, marked incomplete, and resuming against a healthy model pays
// only for the review.
func TestProposalQualityControlFailureResumes(t *testing.T) {
	bad := openaitest.NewServer(t, func(req *openaitest.ChatRequest) openaitest.Reply {
		if req.ResponseFormat.JSONSchema.Name == "proposal_quality_validation" {
			return openaitest.Reply{Content: "It looks fine to me."}
		}
		return liveProposalReply(req)
	})
	env := map[string]string{"OPENAI_BASE_URL": bad.URL, "OPENAI_API_KEY": "sk-test", "MADSPARK_DB": filepath.Join(t.TempDir(), "m.db")}
	profile := writeProfile(t, "me.json", `{"academic_program":"Master's","field_of_study":"Education","research_area":"peer tutoring",
		"weekly_hours":10,"total_timeline":"6 months"}`)
	dir := filepath.Join(t.TempDir(), "out")
	r := invoke(t, env, "proposal", "--profile", profile, "--no-search", "--output-dir", dir)
	m := regexp.MustCompile(`madspark resume (\S+) `).FindStringSubmatch(r.stderr)
	if r.code != 1 || m == nil || !strings.Contains(r.stderr, "the step r0/quality_control failed") || !strings.Contains(r.stderr, "(proposal.qc: ") {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	b, err := os.ReadFile(filepath.Join(dir, "proposal.md"))
	if err != nil || !strings.Contains(string(b), "INCOMPLETE") || !strings.Contains(string(b), "A quasi-experiment in two classes.") {
		t.Fatalf("partial proposal.md: %v\n%s", err, b)
	}
	good := openaitest.NewServer(t, liveProposalReply)
	env["OPENAI_BASE_URL"] = good.URL
	res := invoke(t, env, "resume", m[1], "--output-dir", dir)
	if res.code != 0 || len(good.Requests()) != 1 || good.Requests()[0].ResponseFormat.JSONSchema.Name != "proposal_quality_validation" {
		t.Fatalf("resume: exit %d, %d calls: %s", res.code, len(good.Requests()), res.stderr)
	}
	b, _ = os.ReadFile(filepath.Join(dir, "proposal.md"))
	if strings.Contains(string(b), "INCOMPLETE") {
		t.Error("the resumed proposal is still marked incomplete")
	}
}
