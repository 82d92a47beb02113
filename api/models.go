package api

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"

	"github.com/madspark/madspark"
	"github.com/madspark/madspark/document"
	"github.com/madspark/madspark/engine"
	"github.com/madspark/madspark/pipeline"
	"github.com/madspark/madspark/server"
)

// PipelineModel serves a registered pipeline as an OpenAI model,
// "madspark-NAME": the last user message fills the pipeline's QueryParam,
// the other parameters take their defaults, the run is recorded like any
// other, and the answer is the run's document in Markdown.
type PipelineModel struct {
	def    pipeline.Definition
	reg    *pipeline.Registry
	engine *engine.Engine
	info   Info
}

// PipelineModels returns a PipelineModel for every registered pipeline
// that has a QueryParam and a Document, except those named in skip.
func PipelineModels(reg *pipeline.Registry, e *engine.Engine, info Info, skip ...string) []server.Model {
	var out []server.Model
	for _, d := range reg.List() {
		if d.QueryParam == "" || d.Document == nil || slices.Contains(skip, d.Name) {
			continue
		}
		out = append(out, &PipelineModel{def: d, reg: reg, engine: e, info: info})
	}
	return out
}

// ID is madspark-NAME.
func (m *PipelineModel) ID() string { return "madspark-" + m.def.Name }

// Settings are none: a pipeline's calls each have settings of their own,
// so a request that sets one is refused naming it.
func (m *PipelineModel) Settings() server.Setting { return 0 }

// Complete runs the pipeline for p's last user message. A streaming client
// receives the Markdown in one piece when the run is done.
func (m *PipelineModel) Complete(ctx context.Context, p server.Prompt, onDelta func(string)) (*server.Completion, error) {
	raw, err := json.Marshal(map[string]string{m.def.QueryParam: p.Query()})
	if err != nil {
		return nil, err
	}
	params, err := m.reg.Decode(m.def.Name, raw)
	if err != nil {
		return nil, server.InvalidRequest(fmt.Errorf("the last user message: %w", err))
	}
	i := m.info
	run, err := m.engine.Start(ctx, engine.RunInfo{Pipeline: m.def.Name, Mode: i.Mode, Provider: i.Provider, Model: i.Model, Params: params,
		Subject: m.reg.Subject(m.def.Name, params)}, nil)
	if err != nil {
		return nil, err
	}
	res, runErr := m.def.Run(ctx, run, params)
	if cause := server.StopCause(ctx); runErr != nil && cause != nil {
		// The server stopped: the run is interrupted, resumable.
		runErr = fmt.Errorf("%w: %w", cause, runErr)
	} else if runErr != nil && errors.Is(ctx.Err(), context.Canceled) {
		// The client went away: nobody will read the answer.
		runErr = fmt.Errorf("%w: the client closed the connection", madspark.ErrCancelled)
	}
	if err := run.Finish(ctx, res, runErr); err != nil {
		return nil, err
	}
	if runErr != nil {
		return nil, fmt.Errorf("run %s: %w", run.ID(), runErr)
	}
	rec := run.Record()
	doc, err := m.def.Document(&rec)
	if err != nil {
		return nil, fmt.Errorf("run %s: %w", run.ID(), err)
	}
	text := string(document.Markdown(doc))
	if onDelta != nil {
		onDelta(text)
	}
	return &server.Completion{Text: text, FinishReason: "stop", Usage: run.Usage(), RunID: run.ID()}, nil
}
