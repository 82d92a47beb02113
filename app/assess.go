package app

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/madspark/madspark"
	"github.com/madspark/madspark/atomicfile"
	"github.com/madspark/madspark/batch"
	"github.com/madspark/madspark/engine"
	"github.com/madspark/madspark/failure"
	"github.com/madspark/madspark/llm"
	"github.com/madspark/madspark/pipeline/assess"
)

// assessPipeline is the assess pipeline with web search when a search
// provider is configured and the run is live; without it (and unless p
// asks for no web tools) that is told once.
func (a *App) assessPipeline(p assess.Params) (*assess.Pipeline, error) {
	cfg := a.assessConfig()
	if cfg.Searcher == nil && !p.NoWebTools {
		a.notice("%s", cfg.NoSearchNote)
	}
	return assess.New(cfg)
}

// AssessOutput is an assessment: the run, its result, and with a full
// evaluation the synthesis ranking every judged analysis so far.
type AssessOutput struct {
	Run       *engine.Run
	Result    *assess.Result
	Synthesis *assess.Synthesis
	Elapsed   time.Duration
	// SynthesisErr is a synthesis that failed; the analysis is kept.
	SynthesisErr error
}

// Assess assesses one idea, writing its files under p.OutputDir in the
// seed's layout; a full evaluation then runs the synthesis as its own run.
func (a *App) Assess(ctx context.Context, p assess.Params, timeout time.Duration) (*AssessOutput, error) {
	pipe, err := a.assessPipeline(p)
	if err != nil {
		return nil, err
	}
	out := &AssessOutput{}
	out.Run, out.Elapsed, err = a.Execute(ctx, Spec{Pipeline: "assess", Params: p.Job(), Timeout: timeout}, func(ctx context.Context, r *engine.Run) (any, error) {
		var err error
		out.Result, err = pipe.Run(ctx, r, p)
		return out.Result, err
	})
	if err != nil {
		return nil, resumeWith(err, "--output-dir", p.OutputDir)
	}
	if p.Mode == assess.FullEvaluation {
		sp := assess.SynthesisParams{OutputDir: p.OutputDir, Top: assess.DefaultTop, PromptsDir: p.PromptsDir}
		if out.Synthesis, err = a.synthesize(ctx, pipe, sp, timeout); err != nil {
			out.SynthesisErr = fmt.Errorf("synthesis: %w (the analysis is kept; madspark assess synthesize --output-dir %s ranks it)", err, ShellQuote(p.OutputDir))
		}
	}
	return out, nil
}

// Synthesize ranks every judged analysis under in.OutputDir and has the
// synthesizer explain the top ones, as a run of its own.
func (a *App) Synthesize(ctx context.Context, in assess.SynthesisParams, timeout time.Duration) (*assess.Synthesis, error) {
	ranked, _, err := assess.LoadEvaluations(in.OutputDir)
	if err != nil {
		return nil, err
	}
	if len(ranked) == 0 {
		return nil, Inputf("no judged analyses under %s/analyses: run madspark assess --judge first", in.OutputDir)
	}
	if err := assess.CheckSynthesisPrompts(in.PromptsDir); err != nil {
		return nil, InputError{err}
	}
	pipe, err := assess.New(assess.Config{Mock: a.Info.Mock, Logger: a.cfg.Logger})
	if err != nil {
		return nil, err
	}
	return a.synthesize(ctx, pipe, in, timeout)
}

func (a *App) synthesize(ctx context.Context, pipe *assess.Pipeline, in assess.SynthesisParams, timeout time.Duration) (*assess.Synthesis, error) {
	var s *assess.Synthesis
	_, _, err := a.Execute(ctx, Spec{Pipeline: "assess-synthesis", Params: in, Timeout: timeout}, func(ctx context.Context, r *engine.Run) (any, error) {
		var err error
		s, err = pipe.Synthesize(ctx, r, in)
		return s, err
	})
	return s, err
}

// AssessBatchOutput is a batch of assessments.
type AssessBatchOutput struct {
	*batch.Results
	Usage      llm.Usage         `json:"usage"`
	DurationMS int64             `json:"duration_ms"`
	Synthesis  *assess.Synthesis `json:"synthesis,omitempty"`
	// Err is why the batch failed: an interrupted wait, a failed
	// synthesis, or failed ideas.
	Err error `json:"-"`
}

// AssessBatch assesses ideas as a batch of assess runs on the job queue,
// worked in this process at most concurrency at a time; onUpdate follows
// the batch. Each succeeded idea's files go under
// p.OutputDir in the seed's layout; a failed idea is reported and the
// others go on. A full evaluation ends with one synthesis.
func (a *App) AssessBatch(ctx context.Context, p assess.Params, source string, ideas []assess.IdeaLine, concurrency int, timeout time.Duration, onUpdate func(*madspark.Batch)) (*AssessBatchOutput, error) {
	pipe, err := a.assessPipeline(p)
	if err != nil {
		return nil, err
	}
	reg, err := a.Registry("")
	if err != nil {
		return nil, err
	}
	base, err := json.Marshal(p.Job())
	if err != nil {
		return nil, err
	}
	in := &batch.Input{}
	for _, idea := range ideas {
		var obj map[string]any
		if err := json.Unmarshal(base, &obj); err != nil {
			return nil, err
		}
		obj["idea"] = idea.Idea
		in.Rows = append(in.Rows, batch.Item(reg, "assess", idea.Line, obj))
	}
	start := time.Now()
	b, waitErr := a.RunBatch(ctx, reg, "assess", source, in, BatchOptions{Concurrency: concurrency, Timeout: timeout, Quiet: true, OnUpdate: onUpdate})
	if b == nil {
		return nil, waitErr
	}
	// The analyses in the seed's layout; the run's own report and result
	// stay with the run.
	res, err := b.Service.Files(context.WithoutCancel(ctx), b.Batch, func(name string, data []byte) error {
		_, rest, _ := strings.Cut(name, "/")
		if !strings.HasPrefix(rest, "analyses/") {
			return nil
		}
		return atomicfile.Write(filepath.Join(p.OutputDir, filepath.FromSlash(rest)), data)
	})
	if err != nil {
		return nil, err
	}
	out := &AssessBatchOutput{Results: res, Err: waitErr}
	for _, it := range b.Items {
		if rec, err := a.Store.Run(context.WithoutCancel(ctx), it.RunID); err == nil && it.RunID != "" {
			out.Usage.Add(rec.Usage)
		}
	}
	if p.Mode == assess.FullEvaluation && res.Succeeded > 0 && waitErr == nil {
		quiet := *a
		quiet.cfg.Notices, quiet.cfg.Progress = discard{}, nil
		sp := assess.SynthesisParams{OutputDir: p.OutputDir, Top: assess.DefaultTop, PromptsDir: p.PromptsDir}
		if out.Synthesis, err = quiet.synthesize(ctx, pipe, sp, timeout); err != nil {
			out.Err = fmt.Errorf("synthesis: %w", err)
		}
	}
	out.DurationMS = time.Since(start).Milliseconds()
	if out.Err == nil && res.Failed > 0 {
		out.Err = fmt.Errorf("%d of %d ideas failed (see the summary above)", res.Failed, res.Total)
	}
	return out, nil
}

// ItemsFinished turns onItem, told of each item of a batch as it
// finishes (with how many have and of how many), into a batch update
// callback; nil stays nil.
func ItemsFinished(onItem func(it madspark.BatchItem, done, total int)) func(*madspark.Batch) {
	if onItem == nil {
		return nil
	}
	var seen []bool
	done := 0
	return func(b *madspark.Batch) {
		if seen == nil {
			seen = make([]bool, len(b.Items))
		}
		n := batch.CountsOf(b)
		for i, it := range b.Items {
			s := batch.ItemStatus(it)
			if i < len(seen) && !seen[i] && s != string(madspark.RunQueued) && s != string(madspark.RunRunning) {
				seen[i] = true
				done++
				onItem(it, done, n.Total)
			}
		}
	}
}

// ReadIdeas reads the ideas of a batch file (one per line, or a markdown
// list), telling notices of repeated ones. Problems are InputErrors.
func ReadIdeas(path string, notices io.Writer) ([]assess.IdeaLine, error) {
	file, err := os.Open(path)
	if err != nil {
		return nil, Inputf("--ideas-file: %v", err)
	}
	defer file.Close()
	ideas, dups, err := assess.ParseIdeas(file)
	if err != nil {
		return nil, Inputf("--ideas-file %s: %v", path, err)
	}
	if len(ideas) == 0 {
		return nil, Inputf("--ideas-file %s holds no ideas", path)
	}
	for _, d := range dups {
		fmt.Fprintf(notices, "madspark: %s line %d repeats an idea; it is assessed once\n", path, d.Line)
	}
	return ideas, nil
}

// WriteSummary writes the batch for people: one line per idea (how it
// ended and where its analysis is, under dir, or why it failed), the
// totals and the usage, then the synthesis.
func (o *AssessBatchOutput) WriteSummary(w io.Writer, dir string) error {
	if o.Mode == "mock" {
		fmt.Fprintln(w, assess.MockNote)
	}
	elapsed := time.Duration(o.DurationMS) * time.Millisecond
	fmt.Fprintf(w, "BATCH: %d ideas, %d succeeded, %d failed (%s)\n\n", o.Total, o.Succeeded, o.Failed, elapsed.Round(100*time.Millisecond))
	for _, it := range o.Items {
		if it.Status != string(madspark.RunSucceeded) {
			fmt.Fprintf(w, "  ✗ line %d %q: %s\n", it.Line, short(it.Topic, 60), short(failure.Of(it.Error).Line(), 1<<20))
			continue
		}
		var r assess.Result
		if err := json.Unmarshal(it.Result, &r); err != nil {
			return fmt.Errorf("line %d: result: %w", it.Line, err)
		}
		fmt.Fprintf(w, "  ✓ %-50s %s  → %s\n", r.Slug, r.Outcome(), filepath.Join(dir, "analyses", r.Slug, "analysis.md"))
	}
	fmt.Fprintf(w, "\n%s\n", o.Usage)
	if o.Synthesis != nil {
		fmt.Fprintf(w, "\n%s", o.Synthesis.Report())
	}
	return nil
}

// short is s on one line, cut to n characters.
func short(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if r := []rune(s); len(r) > n {
		return string(r[:n-1]) + "…"
	}
	return s
}
