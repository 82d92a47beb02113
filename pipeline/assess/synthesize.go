package assess

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/madspark/madspark/agent"
	"github.com/madspark/madspark/atomicfile"
	"github.com/madspark/madspark/engine"
	"github.com/madspark/madspark/input"
	"github.com/madspark/madspark/llm"
	"github.com/madspark/madspark/prompt"
	"github.com/madspark/madspark/rootfs"
	"github.com/madspark/madspark/structured"
)

// DefaultTop is how many ideas a synthesis explains.
const DefaultTop = 3

// Where a synthesis writes, under the output directory.
const (
	reportsDir    = "reports"
	synthesisMD   = "synthesis.md"
	synthesisJSON = "synthesis.json"
	synthesisSlug = "synthesis"
)

// SynthesisParams are the inputs of a synthesis.
type SynthesisParams struct {
	// OutputDir is the directory whose analyses/*/evaluation.json are
	// compared; the report goes to its reports/.
	OutputDir string `json:"output_dir"`
	// Top is how many of the best ideas the report explains (1-10).
	Top int `json:"top"`
	// PromptsDir holds prompt files that shadow the built-in ones.
	PromptsDir string `json:"prompts_dir,omitempty"`
}

// Validate reports the first problem with p in one line.
func (p *SynthesisParams) Validate() error {
	if err := input.Check(p); err != nil {
		return err
	}
	switch {
	case strings.TrimSpace(p.OutputDir) == "":
		return errors.New("output_dir must not be empty")
	case p.Top < 1 || p.Top > 10:
		return fmt.Errorf("top must be 1..10, got %d", p.Top)
	}
	return nil
}

// Ranked is one judged analysis in the ranking.
type Ranked struct {
	Rank           int     `json:"rank"`
	Slug           string  `json:"slug"`
	Idea           string  `json:"idea"`
	WeightedScore  float64 `json:"weighted_score"`
	OverallGrade   string  `json:"overall_grade"`
	Recommendation string  `json:"recommendation"`
	Summary        string  `json:"summary"`
	Grades         Grades  `json:"grades"`
	// File is the evaluation.json it was read from, relative to the
	// output directory.
	File string `json:"file"`
}

// GradeLine lists the grades as "market potential B, …".
func (r Ranked) GradeLine() string {
	parts := make([]string, len(Criteria))
	for i, c := range Criteria {
		g, _ := r.Grades.ByKey(c.Key)
		parts[i] = strings.ToLower(c.Title) + " " + g.Grade
	}
	return strings.Join(parts, ", ")
}

// Skipped is an evaluation file that could not be used.
type Skipped struct {
	File   string `json:"file"`
	Reason string `json:"reason"`
}

// LoadEvaluations reads analyses/*/evaluation.json under dir and ranks
// them: by weighted score, recomputed from the grades; ties go to the
// better evidence, then the larger market, then the slug. Files that do not
// parse or hold an invalid grade are returned as skipped.
func LoadEvaluations(dir string) ([]Ranked, []Skipped, error) {
	files, err := filepath.Glob(filepath.Join(dir, analysesDir, "*", evalFile))
	if err != nil {
		return nil, nil, err
	}
	var ranked []Ranked
	var skipped []Skipped
	// Opened inside dir: a link there that leads out of it is skipped,
	// not read into the synthesis prompt.
	fsys := rootfs.FS(dir)
	for _, f := range files {
		rel, _ := filepath.Rel(dir, f)
		rel = filepath.ToSlash(rel)
		b, err := fs.ReadFile(fsys, rel)
		if err != nil {
			skipped = append(skipped, Skipped{rel, err.Error()})
			continue
		}
		var ev Evaluation
		if err := json.Unmarshal(b, &ev); err != nil {
			skipped = append(skipped, Skipped{rel, "not an evaluation: " + err.Error()})
			continue
		}
		score, grade, err := Score(ev.Grades)
		if err != nil {
			skipped = append(skipped, Skipped{rel, err.Error()})
			continue
		}
		slug := filepath.Base(filepath.Dir(f))
		ranked = append(ranked, Ranked{Slug: slug, Idea: ev.Idea, WeightedScore: score, OverallGrade: grade,
			Recommendation: ev.Recommendation, Summary: ev.Summary, Grades: ev.Grades, File: rel})
	}
	points := func(g Grade) float64 { p, _ := Points(g.Grade); return p }
	sort.SliceStable(ranked, func(i, j int) bool {
		a, b := ranked[i], ranked[j]
		switch {
		case a.WeightedScore != b.WeightedScore:
			return a.WeightedScore > b.WeightedScore
		case points(a.Grades.EvidenceQuality) != points(b.Grades.EvidenceQuality):
			return points(a.Grades.EvidenceQuality) > points(b.Grades.EvidenceQuality)
		case points(a.Grades.MarketPotential) != points(b.Grades.MarketPotential):
			return points(a.Grades.MarketPotential) > points(b.Grades.MarketPotential)
		}
		return a.Slug < b.Slug
	})
	for i := range ranked {
		ranked[i].Rank = i + 1
	}
	return ranked, skipped, nil
}

// TopPick is the synthesizer's reason for one of the top ideas.
type TopPick struct {
	Slug string `json:"slug" jsonschema:"minLength=1"`
	Why  string `json:"why" jsonschema:"minLength=1"`
}

// Narrative is the synthesizer's reply: prose around a ranking it is given
// and may not change.
type Narrative struct {
	Overview       string    `json:"overview" jsonschema:"minLength=1"`
	Top            []TopPick `json:"top" jsonschema:"minItems=1"`
	Patterns       []string  `json:"patterns,omitempty"`
	Recommendation string    `json:"recommendation" jsonschema:"minLength=1"`
}

// synthInput is what the synthesizer's prompt is rendered from.
type synthInput struct {
	Entries  []Ranked
	TopSlugs []string
}

// Synthesis is a finished comparison.
type Synthesis struct {
	Ranking   []Ranked  `json:"ranking"`
	Top       int       `json:"top"`
	Narrative Narrative `json:"narrative"`
	Skipped   []Skipped `json:"skipped,omitempty"`
	// Repairs lists the changes made to the synthesizer's reply.
	Repairs     []llm.Repair `json:"repairs"`
	GeneratedAt time.Time    `json:"generated_at"`
	Mock        bool         `json:"mock,omitempty"`
	// OutputDir is the directory compared; Files are relative to it.
	OutputDir string `json:"output_dir"`
	Files     struct {
		Report   string `json:"report"`
		JSON     string `json:"json"`
		LogDir   string `json:"log_dir"`
		Messages string `json:"messages"`
		Summary  string `json:"run_summary"`
	} `json:"files"`
}

// ErrNoEvaluations is returned by Synthesize when there is nothing to
// compare.
var ErrNoEvaluations = errors.New("no judged analyses")

// Synthesize ranks every judged analysis under in.OutputDir, has the
// synthesizer explain the top in.Top in one call, and writes
// reports/synthesis.md and reports/synthesis.json.
func (p *Pipeline) Synthesize(ctx context.Context, r *engine.Run, in SynthesisParams) (_ *Synthesis, err error) {
	if err := in.Validate(); err != nil {
		return nil, err
	}
	ranked, skipped, err := LoadEvaluations(in.OutputDir)
	if err != nil {
		return nil, err
	}
	for _, s := range skipped {
		p.cfg.Logger.Warn("evaluation skipped", "file", s.File, "reason", s.Reason)
	}
	if len(ranked) == 0 {
		return nil, fmt.Errorf("%w under %s (run madspark assess --judge first)", ErrNoEvaluations, filepath.Join(in.OutputDir, analysesDir))
	}
	synth, err := loadSynthesizer(in.PromptsDir)
	if err != nil {
		return nil, err
	}
	start := p.cfg.Now()
	logDir, err := makeLogDir(in.OutputDir, synthesisSlug, start)
	if err != nil {
		return nil, err
	}
	rec := newRecorder(filepath.Join(logDir, messagesFile), p.cfg.Now, atomicfile.Write)
	defer func() {
		agents, total := rec.stats()
		end := p.cfg.Now()
		sum := RunSummary{RunID: r.ID(), PipelineMode: "synthesis", Mode: p.mode(), Status: "succeeded",
			StartedAt: start.UTC(), FinishedAt: end.UTC(), DurationMS: end.Sub(start).Milliseconds(), Agents: agents, Total: total}
		if err != nil {
			sum.Status, sum.Error = "failed", err.Error()
		}
		for _, e := range []error{rec.flush(), atomicfile.WriteJSON(filepath.Join(logDir, summaryFile), sum)} {
			if err == nil && e != nil {
				err = e
			}
		}
	}()

	top := min(in.Top, len(ranked))
	si := synthInput{Entries: ranked}
	for _, e := range ranked[:top] {
		si.TopSlugs = append(si.TopSlugs, e.Slug)
	}
	r.Emit("synthesis", 20, fmt.Sprintf("the synthesizer compares %d analyses", len(ranked)))
	const key = "synthesis"
	n, err := engine.Step(ctx, r, key, stepInput{si, synth.fingerprint}, func(ctx context.Context, c llm.Client) (Narrative, error) {
		return agent.JSON(ctx, rec.client(c, key), synth.agent, p.narrative, si,
			agent.Options{Temperature: tempSynthesizer, Timeout: stageTimeout}, func(n *Narrative, p *structured.Problems) { n.check(p, ranked, si.TopSlugs) })
	})
	if err != nil {
		return nil, err
	}
	res := &Synthesis{Ranking: ranked, Top: top, Narrative: n, Skipped: skipped, GeneratedAt: p.cfg.Now().UTC(), Mock: p.cfg.Mock,
		OutputDir: in.OutputDir, Repairs: r.Repairs()}
	rel := func(path string) string {
		r, _ := filepath.Rel(in.OutputDir, path)
		return filepath.ToSlash(r)
	}
	md := filepath.Join(in.OutputDir, reportsDir, synthesisMD)
	js := filepath.Join(in.OutputDir, reportsDir, synthesisJSON)
	res.Files.Report, res.Files.JSON = rel(md), rel(js)
	res.Files.LogDir, res.Files.Messages, res.Files.Summary = rel(logDir), rel(filepath.Join(logDir, messagesFile)), rel(filepath.Join(logDir, summaryFile))
	if err := atomicfile.WriteJSON(js, res); err != nil {
		return nil, err
	}
	if err := atomicfile.Write(md, []byte(res.Markdown())); err != nil {
		return nil, err
	}
	r.Emit("done", 100, "done")
	return res, nil
}

// check requires the narrative to explain exactly the given top slugs, in
// their order: the ranking is computed, not the model's to change. A reply
// that lists them otherwise is repaired: unknown and repeated slugs are
// dropped, the others put in ranking order, and a missing one is added
// with its judge's summary as the reason.
func (n *Narrative) check(p *structured.Problems, ranked []Ranked, top []string) {
	got := make([]string, len(n.Top))
	for i, t := range n.Top {
		got[i] = t.Slug
	}
	if slices.Equal(got, top) {
		return
	}
	p.Fix("reference", fmt.Sprintf("top must list exactly the slugs %s in that order, got %s", strings.Join(top, ", "), strings.Join(got, ", ")), func() string {
		why := map[string]string{}
		for _, t := range n.Top {
			if _, dup := why[t.Slug]; !dup {
				why[t.Slug] = t.Why
			}
		}
		var added []string
		picks := make([]TopPick, 0, len(top))
		for _, slug := range top {
			w, ok := why[slug]
			if !ok {
				added = append(added, slug)
				w = fallbackWhy(ranked, slug)
			}
			picks = append(picks, TopPick{Slug: slug, Why: w})
		}
		n.Top = picks
		action := fmt.Sprintf("top %s → %s", strings.Join(got, ", "), strings.Join(top, ", "))
		if len(added) > 0 {
			action += "; the judge's summary given for " + strings.Join(added, ", ")
		}
		return action
	})
}

// fallbackWhy is the reason given for a top idea the synthesizer left out:
// its rank, score and the judge's summary.
func fallbackWhy(ranked []Ranked, slug string) string {
	for _, r := range ranked {
		if r.Slug == slug {
			return strings.TrimSpace(fmt.Sprintf("Ranked #%d with %.1f/10 (%s). %s", r.Rank, r.WeightedScore, r.OverallGrade, r.Summary))
		}
	}
	return ""
}

// synthesizer is the synthesizer agent and its prompts' fingerprint.
type synthesizer struct {
	agent       *agent.Agent
	fingerprint string
}

func loadSynthesizer(promptsDir string) (*synthesizer, error) {
	l, err := prompt.New(BuiltinPrompts(), promptsDir)
	if err != nil {
		return nil, err
	}
	a, _, fp, err := build(l, promptPair{name: agentSynthesizer, user: "agents/synthesizer/user/compare.md", agentDir: "synthesizer"})
	if err != nil {
		return nil, err
	}
	sample := synthInput{Entries: []Ranked{{Rank: 1, Slug: "x", Idea: "x"}}, TopSlugs: []string{"x"}}
	if _, err := a.Request(sample, agent.Options{}); err != nil {
		return nil, fmt.Errorf("prompt of %w", err)
	}
	return &synthesizer{a, fp}, nil
}

// CheckSynthesisPrompts loads and renders the synthesizer's prompts
// without calling a model.
func CheckSynthesisPrompts(promptsDir string) error {
	_, err := loadSynthesizer(promptsDir)
	return err
}
