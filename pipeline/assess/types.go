package assess

import (
	"fmt"
	"strings"

	"github.com/madspark/madspark/document"
	"github.com/madspark/madspark/llm"
	"github.com/madspark/madspark/search"
	"github.com/madspark/madspark/structured"
)

// Verdicts of the reviewer and the fact checker. A reply in other words
// ("accept", "revise") is mapped onto them by verdictSynonyms.
const (
	Approve = "approve"
	Reject  = "reject"
)

// verdictSynonyms are the words models use for the verdicts.
var verdictSynonyms = map[string]string{
	"accept": Approve, "accepted": Approve, "approved": Approve, "pass": Approve, "passed": Approve, "ok": Approve, "yes": Approve,
	"revise": Reject, "revision": Reject, "needs revision": Reject, "rejected": Reject, "fail": Reject, "failed": Reject, "no": Reject,
}

// Issue is a problem the reviewer found in one section, with what to do
// about it.
type Issue struct {
	Section    string `json:"section" jsonschema:"minLength=1"`
	Issue      string `json:"issue" jsonschema:"minLength=1"`
	Suggestion string `json:"suggestion" jsonschema:"minLength=1"`
}

// Improvement is a change that would make a section better.
type Improvement struct {
	Section    string `json:"section" jsonschema:"minLength=1"`
	Suggestion string `json:"suggestion" jsonschema:"minLength=1"`
}

// Feedback is the reviewer's verdict on one iteration, as written to
// reviewer_feedback_iteration_N.json.
type Feedback struct {
	OverallAssessment string        `json:"overall_assessment" jsonschema:"minLength=1"`
	Strengths         []string      `json:"strengths,omitempty"`
	CriticalIssues    []Issue       `json:"critical_issues,omitempty"`
	Improvements      []Improvement `json:"improvements,omitempty"`
	MinorSuggestions  []string      `json:"minor_suggestions,omitempty"`
	// IterationRecommendation is approve (the analysis is done) or reject
	// (it needs another iteration).
	IterationRecommendation string `json:"iteration_recommendation" jsonschema:"enum=approve,enum=reject"`
	IterationReason         string `json:"iteration_reason" jsonschema:"minLength=1"`
}

// Check requires a rejection to say what to change: a reject with no
// critical issue and no improvement keeps its verdict, and its reason
// becomes the improvement the revision works on.
func (f *Feedback) Check(p *structured.Problems) {
	if f.IterationRecommendation == Reject && len(f.CriticalIssues) == 0 && len(f.Improvements) == 0 {
		p.Fix("consistency", "a reject recommendation must list at least one critical issue or improvement for the revision", func() string {
			reason := strings.TrimSpace(f.IterationReason)
			if reason == "" {
				reason = strings.TrimSpace(f.OverallAssessment)
			}
			f.Improvements = []Improvement{{Section: "Whole analysis", Suggestion: reason}}
			return "reject without issues → its reason taken as the improvement"
		})
	}
}

// Approved reports whether the reviewer approved.
func (f *Feedback) Approved() bool { return f != nil && f.IterationRecommendation == Approve }

// Claim statuses of the fact checker.
const (
	Supported    = "supported"
	Unsupported  = "unsupported"
	Contradicted = "contradicted"
	Unverifiable = "unverifiable"
)

// Claim is one factual claim the fact checker checked.
type Claim struct {
	Claim   string `json:"claim" jsonschema:"minLength=1"`
	Section string `json:"section" jsonschema:"minLength=1"`
	// Status is supported (a source backs it), unsupported (stated as
	// fact with nothing behind it), contradicted (a source says otherwise)
	// or unverifiable (hedged, or beyond what any source covers).
	Status string `json:"status" jsonschema:"enum=supported,enum=unsupported,enum=contradicted,enum=unverifiable"`
	// Source is the URL of the search result the status rests on, if any.
	Source string `json:"source,omitempty"`
	Note   string `json:"note,omitempty"`
}

// FactCheck is the fact checker's verdict on one iteration, as written to
// fact_check_iteration_N.json.
type FactCheck struct {
	Claims  []Claim `json:"claims" jsonschema:"minItems=1"`
	Verdict string  `json:"verdict" jsonschema:"enum=approve,enum=reject"`
	Summary string  `json:"summary" jsonschema:"minLength=1"`
}

// Check keeps the verdict consistent with the claims: an analysis with a
// contradicted or unsupported claim cannot be approved, so the verdict
// follows the evidence and becomes reject (the analyst revises).
func (f *FactCheck) Check(p *structured.Problems) {
	if f.Verdict != Approve {
		return
	}
	for _, c := range f.Claims {
		if c.Status == Contradicted || c.Status == Unsupported {
			p.Fix("consistency", fmt.Sprintf("verdict approve, but the claim %q is %s", short(c.Claim, 80), c.Status), func() string {
				f.Verdict = Reject
				return fmt.Sprintf("verdict approve → reject: the claim %q is %s", short(c.Claim, 40), c.Status)
			})
			return
		}
	}
}

// Approved reports whether the fact checker approved.
func (f *FactCheck) Approved() bool { return f != nil && f.Verdict == Approve }

// Problems returns the claims the analyst must fix.
func (f *FactCheck) Problems() []Claim {
	if f == nil {
		return nil
	}
	var out []Claim
	for _, c := range f.Claims {
		if c.Status == Contradicted || c.Status == Unsupported {
			out = append(out, c)
		}
	}
	return out
}

// Iteration is one pass of the analyst ⇄ reviewer loop.
type Iteration struct {
	Number int `json:"number"`
	// Analysis is the analyst's markdown; File is where it was written,
	// relative to the output directory.
	Analysis string `json:"analysis"`
	Words    int    `json:"words"`
	// Short reports an analysis kept with fewer words than the target
	// (Params.MinWords), which the prompt asks for.
	Short bool   `json:"short,omitempty"`
	File  string `json:"file"`
	// Feedback and FactCheck are the reviewers' verdicts, when they ran.
	Feedback      *Feedback  `json:"feedback,omitempty"`
	FeedbackFile  string     `json:"feedback_file,omitempty"`
	FactCheck     *FactCheck `json:"fact_check,omitempty"`
	FactCheckFile string     `json:"fact_check_file,omitempty"`
}

// Approved reports whether every reviewer that ran approved the iteration.
func (it *Iteration) Approved(factCheck bool) bool {
	return it.Feedback.Approved() && (!factCheck || it.FactCheck.Approved())
}

// Why the loop stopped.
const (
	StopNoReview      = "no_review"
	StopApproved      = "approved"
	StopMaxIterations = "max_iterations"
)

// Files are where a run wrote, relative to Result.OutputDir.
type Files struct {
	Dir        string `json:"dir"`
	Analysis   string `json:"analysis"`
	Metadata   string `json:"metadata"`
	Evaluation string `json:"evaluation,omitempty"`
	LogDir     string `json:"log_dir"`
	Messages   string `json:"messages"`
	Summary    string `json:"run_summary"`
}

// Result is a finished assessment.
type Result struct {
	Idea       string      `json:"idea"`
	Slug       string      `json:"slug"`
	Mode       Mode        `json:"pipeline_mode"`
	FactCheck  bool        `json:"fact_check"`
	Strictness string      `json:"strictness"`
	Iterations []Iteration `json:"iterations"`
	Approved   bool        `json:"approved"`
	StopReason string      `json:"stop_reason"`
	// WebTools reports whether the analyst had web research; WebNote
	// says why not, or what failed.
	WebTools   bool            `json:"web_tools"`
	WebNote    string          `json:"web_note,omitempty"`
	Queries    []string        `json:"queries,omitempty"`
	Sources    []search.Result `json:"sources,omitempty"`
	Evaluation *Evaluation     `json:"evaluation,omitempty"`
	OutputDir  string          `json:"output_dir"`
	Files      Files           `json:"files"`
	// Mock reports that the outputs are mock data.
	Mock bool `json:"mock,omitempty"`
	// Repairs lists the changes made to replies that were usable but broke
	// a soft rule; empty when there were none.
	Repairs []llm.Repair `json:"repairs"`
}

// Final returns the last iteration.
func (r *Result) Final() *Iteration {
	if len(r.Iterations) == 0 {
		return nil
	}
	return &r.Iterations[len(r.Iterations)-1]
}

// Outcome says in a few words how the assessment ended: "2
// iterations, approved, 7.4/10 B".
func (r *Result) Outcome() string {
	s := document.Count(len(r.Iterations), "iteration")
	if r.Mode.Reviews() {
		s += map[bool]string{true: ", approved", false: ", not approved"}[r.Approved]
	}
	if ev := r.Evaluation; ev != nil {
		s += fmt.Sprintf(", %.1f/10 %s", ev.WeightedScore, ev.OverallGrade)
	}
	return s
}

func short(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if r := []rune(s); len(r) > n {
		return string(r[:n]) + "…"
	}
	return s
}
