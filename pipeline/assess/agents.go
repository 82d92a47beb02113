package assess

import (
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"fmt"
	"io/fs"

	"github.com/madspark/madspark/agent"
	"github.com/madspark/madspark/prompt"
	"github.com/madspark/madspark/search"
)

// The built-in prompts, one file per agent and message, laid out as the
// seed's config/prompts: agents/<agent>/system.md, agents/<agent>/user/*.md,
// shared pieces under shared/, alternatives under experimental/.
//
//go:embed prompts
var promptFS embed.FS

// BuiltinPrompts returns the built-in prompt tree, rooted at its agents/
// and shared/ directories.
func BuiltinPrompts() fs.FS {
	sub, err := fs.Sub(promptFS, "prompts")
	if err != nil {
		return promptFS // cannot happen: "prompts" is a valid path
	}
	return sub
}

// Agent names. The analyst plans the research and writes the analysis.
const (
	agentAnalyst     = "assess.analyst"
	agentReviewer    = "assess.reviewer"
	agentFactChecker = "assess.fact_checker"
	agentJudge       = "assess.judge"
	agentSynthesizer = "assess.synthesizer"
)

// roster is one run's agents, built from the prompts the run asked for.
type roster struct {
	research, analyst, revise, reviewer, factChecker, judge *agent.Agent
	// fingerprint of each agent's prompt texts, so that a resumed run does
	// not replay a step whose prompt changed.
	fingerprint map[*agent.Agent]string
	// sources tells where each agent's system prompt came from.
	sources map[string]string
}

// promptPair names one agent's prompts: its system prompt and one user
// message.
type promptPair struct {
	dst              **agent.Agent
	name, sys, user  string
	choice, agentDir string
}

// loadRoster loads and parses every agent's prompts for in, and renders
// each once with sample inputs, so that a missing file, an include cycle
// or a template that names an unknown field is reported before any call.
func loadRoster(in Params) (*roster, error) {
	l, err := prompt.New(BuiltinPrompts(), in.PromptsDir)
	if err != nil {
		return nil, err
	}
	r := &roster{fingerprint: map[*agent.Agent]string{}, sources: map[string]string{}}
	pairs := []promptPair{
		{&r.research, agentAnalyst, "", "agents/analyst/user/research.md", in.AnalystPrompt, "analyst"},
		{&r.analyst, agentAnalyst, "", "agents/analyst/user/initial.md", in.AnalystPrompt, "analyst"},
		{&r.revise, agentAnalyst, "", "agents/analyst/user/revision.md", in.AnalystPrompt, "analyst"},
		{&r.reviewer, agentReviewer, "", "agents/reviewer/user/review.md", in.ReviewerPrompt, "reviewer"},
		{&r.factChecker, agentFactChecker, "", "agents/fact_checker/user/check.md", "", "fact_checker"},
		{&r.judge, agentJudge, "", "agents/judge/user/evaluate.md", "", "judge"},
	}
	for _, p := range pairs {
		a, src, fp, err := build(l, p)
		if err != nil {
			return nil, err
		}
		*p.dst = a
		r.sources[p.agentDir] = src
		r.fingerprint[a] = fp
	}
	samples := []struct {
		a  *agent.Agent
		in any
	}{
		{r.research, researchInput{Idea: "x", Max: 1, Sections: Sections}},
		{r.analyst, sampleAnalyst()},
		{r.analyst, analystInput{Idea: "x", Iteration: 1, MinWords: 800, Sections: Sections}},
		{r.revise, sampleRevision()},
		{r.revise, analystInput{Idea: "x", Iteration: 2, MinWords: 800, Sections: Sections, Previous: "p"}},
		{r.reviewer, reviewInput{Idea: "x", Iteration: 2, MaxIterations: 3, Strictness: Normal, Sections: Sections, Previous: sampleFeedback()}},
		{r.factChecker, factCheckInput{Idea: "x", Iteration: 1, Sources: sampleSources()}},
		{r.factChecker, factCheckInput{Idea: "x", Iteration: 1}},
		{r.judge, judgeInput{Idea: "x", Iterations: 1, Sources: sampleSources(), Criteria: Criteria}},
	}
	for _, s := range samples {
		if _, err := s.a.Request(s.in, agent.Options{}); err != nil {
			return nil, fmt.Errorf("prompt of %w", err)
		}
	}
	return r, nil
}

// build loads one agent's system prompt (the user's choice for analyst and
// reviewer) and user message, and parses them. It returns the agent, where
// its system prompt came from, and a fingerprint of both texts.
func build(l *prompt.Loader, p promptPair) (*agent.Agent, string, string, error) {
	sys, src, err := l.System(p.agentDir, p.choice)
	if err != nil {
		return nil, "", "", err
	}
	user, err := l.Load(p.user)
	if err != nil {
		return nil, "", "", err
	}
	a, err := agent.FromText(p.name, sys, user)
	if err != nil {
		return nil, "", "", fmt.Errorf("%s (system prompt %s, message %s): %w", p.name, src, p.user, err)
	}
	sum := sha256.Sum256([]byte(sys + "\x00" + user))
	return a, src, hex.EncodeToString(sum[:8]), nil
}

// CheckPrompts loads every prompt in's run would use and renders it once,
// without calling a model: a missing file, an include cycle or a template
// error is reported as one line.
func CheckPrompts(in Params) error {
	if _, err := loadRoster(in); err != nil {
		return err
	}
	return nil
}

func sampleSources() []source {
	return []source{{N: 1, Title: "t", URL: "https://example.com", Snippet: "s"}}
}

func sampleFeedback() *Feedback {
	return &Feedback{OverallAssessment: "a", Strengths: []string{"s"}, CriticalIssues: []Issue{{"s", "i", "x"}},
		Improvements: []Improvement{{"s", "x"}}, MinorSuggestions: []string{"m"}, IterationRecommendation: Reject, IterationReason: "r"}
}

func sampleAnalyst() analystInput {
	return analystInput{Idea: "x", Iteration: 1, MinWords: 800, Sections: Sections, Sources: sampleSources()}
}

func sampleRevision() analystInput {
	in := sampleAnalyst()
	in.Iteration, in.Previous, in.Feedback = 2, "p", sampleFeedback()
	in.FactIssues = []Claim{{Claim: "c", Section: "s", Status: Unsupported, Note: "n"}}
	return in
}

// sourcesOf numbers search results for the prompts.
func sourcesOf(results []search.Result) []source {
	out := make([]source, len(results))
	for i, r := range results {
		out[i] = source{N: i + 1, Title: r.Title, URL: r.URL, Snippet: r.Snippet}
	}
	return out
}
