package assess

import (
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/madspark/madspark/input"
)

// Mode is how far an assessment goes, as the seed's pipeline modes name it.
type Mode string

// The modes. Every mode but Analyze runs the analyst ⇄ reviewer loop;
// AnalyzeReviewAndJudge and FullEvaluation grade the result; FullEvaluation
// also asks for a synthesis across every judged analysis (see
// Pipeline.Synthesize), which the caller runs once after all its ideas.
const (
	Analyze               Mode = "analyze"
	AnalyzeAndReview      Mode = "analyze_and_review"
	AnalyzeReviewAndJudge Mode = "analyze_review_and_judge"
	FullEvaluation        Mode = "full_evaluation"
)

// Modes lists the modes.
var Modes = []Mode{Analyze, AnalyzeAndReview, AnalyzeReviewAndJudge, FullEvaluation}

// Reviews reports whether the mode runs the reviewer.
func (m Mode) Reviews() bool { return m != Analyze }

// Judges reports whether the mode runs the judge.
func (m Mode) Judges() bool { return m == AnalyzeReviewAndJudge || m == FullEvaluation }

// Strictness levels of the reviewer.
const (
	Lenient = "lenient"
	Normal  = "normal"
	Strict  = "strict"
)

// Limits on the parameters.
const (
	MaxIdeaLen        = 2000
	MaxIterationsCap  = 5
	MinWordsFloor     = 100
	MinWordsCap       = 10000
	MaxWebsearchesCap = 20
)

// Params are the inputs of one idea's assessment.
type Params struct {
	// Idea is the one-line business idea.
	Idea string `json:"idea"`
	Mode Mode   `json:"mode"`
	// FactCheck runs the fact checker beside the reviewer; both must
	// approve an iteration to end the loop. It needs a mode that reviews.
	FactCheck bool `json:"fact_check"`
	// MaxIterations caps the analyst ⇄ reviewer loop (1-5).
	MaxIterations int `json:"max_iterations"`
	// MinWords is the shortest acceptable analysis.
	MinWords int `json:"min_words"`
	// Strictness is the reviewer's: lenient, normal or strict.
	Strictness string `json:"strictness"`
	// NoWebTools turns web research off even when a search provider is
	// configured.
	NoWebTools bool `json:"no_web_tools"`
	// MaxWebsearches caps the searches the analyst may run (1-20).
	MaxWebsearches int `json:"max_websearches"`
	// AnalystPrompt and ReviewerPrompt choose the agents' system prompts:
	// a name under agents/<agent>/ or experimental/<agent>/, or a path (see
	// prompt.SystemPaths);
	// empty is the default.
	AnalystPrompt  string `json:"analyst_prompt,omitempty"`
	ReviewerPrompt string `json:"reviewer_prompt,omitempty"`
	// PromptsDir holds prompt files that shadow the built-in ones.
	PromptsDir string `json:"prompts_dir,omitempty"`
	// OutputDir is where analyses/ and logs/ are written.
	OutputDir string `json:"output_dir"`
}

// DefaultParams returns the defaults: review loop of at most 3 iterations
// at normal strictness, analyses of at least 800 words, up to 10 searches,
// files under the current directory.
func DefaultParams() Params {
	return Params{Mode: Analyze, MaxIterations: 3, MinWords: 800, Strictness: Normal, MaxWebsearches: 10, OutputDir: "."}
}

// Validate reports the first problem with p, as one line naming the
// parameter.
func (p *Params) Validate() error {
	if err := input.Check(p); err != nil {
		return err
	}
	if err := ValidateIdea(p.Idea); err != nil {
		return err
	}
	return p.ValidateSettings()
}

// ValidateSettings checks every parameter but the idea, as Validate does:
// what a command can check from its flags before it reads its ideas.
func (p *Params) ValidateSettings() error {
	switch {
	case !validMode(p.Mode):
		return fmt.Errorf("mode must be one of %s, got %q", modeList(), p.Mode)
	case p.FactCheck && !p.Mode.Reviews():
		return errors.New("fact_check needs a mode with review")
	case p.MaxIterations < 1 || p.MaxIterations > MaxIterationsCap:
		return fmt.Errorf("max_iterations must be 1..%d, got %d", MaxIterationsCap, p.MaxIterations)
	case p.MinWords < MinWordsFloor || p.MinWords > MinWordsCap:
		return fmt.Errorf("min_words must be %d..%d, got %d", MinWordsFloor, MinWordsCap, p.MinWords)
	case p.Strictness != Lenient && p.Strictness != Normal && p.Strictness != Strict:
		return fmt.Errorf("strictness must be lenient, normal or strict, got %q", p.Strictness)
	case p.MaxWebsearches < 1 || p.MaxWebsearches > MaxWebsearchesCap:
		return fmt.Errorf("max_websearches must be 1..%d, got %d", MaxWebsearchesCap, p.MaxWebsearches)
	case strings.TrimSpace(p.OutputDir) == "":
		return errors.New("output_dir must not be empty")
	}
	return nil
}

// ValidateIdea reports what is wrong with an idea, if anything.
func ValidateIdea(idea string) error {
	switch {
	case strings.TrimSpace(idea) == "":
		return errors.New("idea must not be empty")
	case !utf8.ValidString(idea):
		return errors.New("idea is not valid UTF-8")
	case utf8.RuneCountInString(idea) > MaxIdeaLen:
		return fmt.Errorf("idea is %d characters; the limit is %d", utf8.RuneCountInString(idea), MaxIdeaLen)
	case strings.ContainsAny(idea, "\x00\r\n"):
		return errors.New("idea must be one line")
	}
	return nil
}

func validMode(m Mode) bool {
	for _, x := range Modes {
		if m == x {
			return true
		}
	}
	return false
}

func modeList() string {
	s := make([]string, len(Modes))
	for i, m := range Modes {
		s[i] = string(m)
	}
	return strings.Join(s, ", ")
}
