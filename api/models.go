package api

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/madspark/madspark"
	"github.com/madspark/madspark/document"
	"github.com/madspark/madspark/engine"
	"github.com/madspark/madspark/pipeline"
	"github.com/madspark/madspark/server"
	"github.com/madspark/madspark/tokens"
)

// PipelineModel serves a registered pipeline as an OpenAI model,
// "madspark-NAME": the last user message fills the pipeline's QueryParam,
// the other parameters take their defaults, the run is recorded like any
// other, and the answer is the run's document in Markdown.
//
// The settings clients send by default each have an effect on the run
// (see Settings); a JSON format and tools, which no pipeline step can
// honour, are refused naming them.
type PipelineModel struct {
	def    pipeline.Definition
	reg    *pipeline.Registry
	engine *engine.Engine
	info   Info
	tokens *tokens.Counter
}

// PipelineModels returns a PipelineModel for every registered pipeline
// that has a QueryParam and a Document, except those named in skip;
// counter bounds their answers' tokens (max_tokens).
func PipelineModels(reg *pipeline.Registry, e *engine.Engine, info Info, counter *tokens.Counter, skip ...string) []server.Model {
	var out []server.Model
	for _, d := range reg.List() {
		if d.QueryParam == "" || d.Document == nil || slices.Contains(skip, d.Name) {
			continue
		}
		out = append(out, &PipelineModel{def: d, reg: reg, engine: e, info: info, tokens: counter})
	}
	return out
}

// ID is madspark-NAME.
func (m *PipelineModel) ID() string { return "madspark-" + m.def.Name }

// Settings are those that have an effect on a whole run:
//
//   - temperature, top_p and seed replace every agent's own for the run;
//   - system and developer messages (instructions) are added to every
//     agent's system prompt, after its own;
//   - max_tokens bounds the answer, the run's Markdown, which is cut at
//     that many tokens with finish_reason "length";
//   - stop ends the answer before the first stop sequence in it.
//
// A JSON format (the answer is the run's document) and tools (no step of
// a pipeline calls them) are not among them.
func (m *PipelineModel) Settings() server.Setting {
	return server.SettingSystem | server.SettingTemperature | server.SettingTopP | server.SettingSeed | server.SettingMaxTokens | server.SettingStop
}

// Complete runs the pipeline for p's last user message. The run's
// progress is the answer's reasoning, a stage a line, which a streaming
// client receives as each stage starts; the answer, the Markdown, comes in
// one piece when the run is done.
func (m *PipelineModel) Complete(ctx context.Context, p server.Prompt, out *server.Stream) (*server.Completion, error) {
	raw, err := json.Marshal(map[string]string{m.def.QueryParam: p.Query()})
	if err != nil {
		return nil, err
	}
	params, err := m.reg.Decode(m.def.Name, raw)
	if err != nil {
		return nil, server.InvalidRequest(fmt.Errorf("the last user message: %w", err))
	}
	i := m.info
	thoughts := NewThoughts(out)
	run, err := m.engine.Start(ctx, engine.RunInfo{Pipeline: m.def.Name, Mode: i.Mode, Provider: i.Provider, Model: i.Model, Params: params,
		Subject: m.reg.Subject(m.def.Name, params), Sampling: samplingOf(p)}, thoughts.Sink)
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
	text, finish := m.bound(string(document.Markdown(doc)), p)
	if out != nil {
		out.Text(text)
	}
	return &server.Completion{Text: text, Reasoning: thoughts.String(), FinishReason: finish, Usage: run.Usage(), RunID: run.ID()}, nil
}

// Thoughts gather a run's progress as a model's reasoning: a line per
// stage as it starts ("generate: generating 5 ideas"), sent on as it
// happens to a stream's Reasoning. It is safe for concurrent use.
type Thoughts struct {
	out *server.Stream
	mu  sync.Mutex
	b   strings.Builder
}

// NewThoughts returns Thoughts that stream to out, when it is not nil.
func NewThoughts(out *server.Stream) *Thoughts { return &Thoughts{out: out} }

// Sink takes a run's event (engine.Engine.Start's sink).
func (t *Thoughts) Sink(e madspark.Event) {
	if e.Type != madspark.EventProgress || e.Stage == "" || e.Stage == "done" {
		return
	}
	line := e.Stage
	if e.Message != "" {
		line += ": " + e.Message
	}
	line += "\n"
	t.mu.Lock()
	defer t.mu.Unlock()
	t.b.WriteString(line)
	if t.out != nil && t.out.Reasoning != nil {
		t.out.Reasoning(line)
	}
}

// String returns the reasoning so far.
func (t *Thoughts) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.b.String()
}

// samplingOf is what p sets for every call of a run; nil for nothing.
func samplingOf(p server.Prompt) *engine.Sampling {
	if p.Temperature == nil && p.TopP == nil && p.Seed == nil && p.System == "" {
		return nil
	}
	return &engine.Sampling{Temperature: p.Temperature, TopP: p.TopP, Seed: p.Seed, Instructions: p.System}
}

// bound cuts an answer as p's stop sequences and token limit say, and
// returns it with its finish reason: "stop", or "length" when the limit
// cut it.
func (m *PipelineModel) bound(text string, p server.Prompt) (string, string) {
	if i := firstStop(text, p.Stop); i >= 0 {
		text = text[:i]
	}
	if p.MaxTokens > 0 && m.tokens != nil {
		if cut, more := m.tokens.Cut(text, p.MaxTokens); more {
			return cut, "length"
		}
	}
	return text, "stop"
}

// firstStop returns where the first of stops begins in text, or -1.
func firstStop(text string, stops []string) int {
	first := -1
	for _, s := range stops {
		if i := strings.Index(text, s); i >= 0 && (first < 0 || i < first) {
			first = i
		}
	}
	return first
}
