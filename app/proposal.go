package app

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/madspark/madspark/engine"
	"github.com/madspark/madspark/pipeline/proposal"
)

// ProposalProfile reads the interview's answers from the YAML or JSON file
// path, or, with no path, interviews the user: questions to out, answers
// from in. It returns the profile and where it came from.
func ProposalProfile(ctx context.Context, path string, in io.Reader, out io.Writer) (proposal.UserProfile, string, error) {
	if path != "" {
		f, err := os.Open(path)
		if err != nil {
			return proposal.UserProfile{}, "", Inputf("profile %s: %v", path, errors.Unwrap(err))
		}
		defer f.Close()
		prof, err := proposal.ParseProfile(filepath.Base(path), f)
		if err != nil {
			return prof, "", InputError{err}
		}
		return prof, filepath.Base(path), nil
	}
	prof, err := proposal.Interview(ctx, in, out)
	if errors.Is(err, context.Canceled) {
		return prof, "", err
	}
	if err != nil {
		return prof, "", InputError{err}
	}
	return prof, "interview", nil
}

// ProposalOutput is what a proposal run wrote.
type ProposalOutput struct {
	Dir     string
	Result  *proposal.Result
	Run     *engine.Run
	Meta    proposal.Meta
	Elapsed time.Duration
	// Files are proposal.pdf, proposal.md and proposal.json.
	Files map[string][]byte
}

// Proposal writes a research proposal into outDir: one given is made
// first, so that a bad one fails before any call; the default one
// (run_… under the outputs directory) once there is a proposal to put in it. A step that
// fails after others finished leaves their output written, marked
// incomplete; resuming the run finishes it.
func (a *App) Proposal(ctx context.Context, p proposal.Params, outDir string, timeout time.Duration) (*ProposalOutput, error) {
	font, err := PDFFont(a.cfg.Getenv)
	if err != nil {
		return nil, err
	}
	if outDir != "" {
		if _, err := MakeOutputDir(a.cfg.Getenv, outDir); err != nil {
			return nil, InputError{err}
		}
	}
	pipe, err := proposal.New(a.proposalSources(), a.cfg.Logger)
	if err != nil {
		return nil, err
	}
	var res *proposal.Result
	run, elapsed, err := a.Execute(ctx, Spec{Pipeline: "proposal", Params: p, Timeout: timeout}, func(ctx context.Context, r *engine.Run) (any, error) {
		var err error
		res, err = pipe.Run(ctx, r, p)
		return res, err
	})
	if err != nil {
		dir := outDir
		if res != nil && res.FailedStep != "" && run != nil {
			if out, werr := a.writeProposal(run, res, outDir, font, elapsed); werr == nil {
				a.notice("the step %s failed; the stages before it are in %s", res.FailedStep, out.Dir)
				dir = out.Dir
			}
		}
		if dir == "" {
			dir = "DIR"
		}
		return nil, resumeWith(err, "--output-dir", dir)
	}
	return a.writeProposal(run, res, outDir, font, elapsed)
}

// writeProposal writes res's files to outDir (made now when it is the
// default).
func (a *App) writeProposal(run *engine.Run, res *proposal.Result, outDir string, font []byte, elapsed time.Duration) (*ProposalOutput, error) {
	dir, err := MakeOutputDir(a.cfg.Getenv, outDir)
	if err != nil {
		return nil, fmt.Errorf("run %s: %w", run.ID(), err)
	}
	meta := proposal.Meta{RunID: run.ID(), Mock: a.Info.Mock, Provider: a.Info.Name, Model: a.Info.Model, Date: time.Now()}
	envelope := a.Envelope(run, "proposal", nil, elapsed)
	delete(envelope, "result")
	envelope["output_dir"] = dir
	envelope["files"] = map[string]string{
		"pdf": filepath.Join(dir, "proposal.pdf"), "markdown": filepath.Join(dir, "proposal.md"), "json": filepath.Join(dir, "proposal.json"),
	}
	files, err := res.Files(meta, font, envelope)
	if err != nil {
		return nil, err
	}
	if err := writeFiles(dir, files); err != nil {
		return nil, fmt.Errorf("run %s: %w", run.ID(), err)
	}
	return &ProposalOutput{Dir: dir, Result: res, Run: run, Meta: meta, Elapsed: elapsed, Files: files}, nil
}
