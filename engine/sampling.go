package engine

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/madspark/madspark"
	"github.com/madspark/madspark/llm"
)

// Sampling replaces settings of every call a run makes: a chat client's
// settings for a whole pipeline (RunInfo.Sampling). Nil fields leave the
// agents' own.
type Sampling struct {
	Temperature *float64 `json:"temperature,omitempty"`
	TopP        *float64 `json:"top_p,omitempty"`
	Seed        *int64   `json:"seed,omitempty"`
	// Instructions are the asker's, added to every call's system prompt
	// after the agent's own.
	Instructions string `json:"instructions,omitempty"`
}

// SamplingKey is the journal key under which a run keeps its Sampling, so
// that a resumed run makes its calls as it began them. No pipeline's step
// key has a colon.
const SamplingKey = "run:sampling"

// instructionsHeading introduces the asker's instructions in an agent's
// system prompt: they apply to the agent's part, within its reply format.
const instructionsHeading = "Instructions from the person who asked for this work (follow them where they bear on your part; the reply format above still holds):\n"

// apply returns req with s's settings, or req itself when s changes
// nothing.
func (s *Sampling) apply(req *llm.Request) *llm.Request {
	if s == nil {
		return req
	}
	cp := *req
	if s.Temperature != nil {
		cp.Temperature = *s.Temperature
	}
	if s.TopP != nil {
		cp.TopP = s.TopP
	}
	if s.Seed != nil {
		cp.Seed = s.Seed
	}
	if s.Instructions != "" {
		if cp.System != "" {
			cp.System += "\n\n"
		}
		cp.System += instructionsHeading + s.Instructions
	}
	return &cp
}

// keepSampling journals the run's Sampling, if it has one.
func (r *Run) keepSampling(ctx context.Context) error {
	if r.sampling == nil {
		return nil
	}
	out, err := json.Marshal(r.sampling)
	if err != nil {
		return fmt.Errorf("engine: encode sampling: %w", err)
	}
	hash, err := inputHash(r.sampling)
	if err != nil {
		return err
	}
	now := r.e.now()
	step := &madspark.Step{RunID: r.rec.ID, Key: SamplingKey, InputHash: hash, Status: madspark.StepDone, Output: out, StartedAt: now, FinishedAt: now}
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	if err := r.e.Store.SaveStep(sctx, step); err != nil {
		return fmt.Errorf("engine: journal the run's sampling: %w", err)
	}
	return nil
}

// samplingOf reads a run's Sampling from its journaled step.
func samplingOf(s *madspark.Step) (*Sampling, error) {
	var out Sampling
	if err := json.Unmarshal(s.Output, &out); err != nil {
		return nil, fmt.Errorf("engine: run %s: its sampling: %w", s.RunID, err)
	}
	return &out, nil
}
