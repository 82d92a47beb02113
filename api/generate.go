package api

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"

	"github.com/madspark/madspark"
	"github.com/madspark/madspark/engine"
	"github.com/madspark/madspark/llm"
	"github.com/madspark/madspark/middleware"
	"github.com/madspark/madspark/pipeline/spark"
	"github.com/madspark/madspark/server"
)

// GenerateIdeasRequest is the seed's synchronous form, POST
// /api/generate-ideas: a spark run answered when it is done.
type GenerateIdeasRequest struct {
	Topic            string `json:"topic"`
	Context          string `json:"context,omitempty"`
	NumCandidates    *int   `json:"num_candidates,omitempty"`
	NumTopCandidates *int   `json:"num_top_candidates,omitempty"`
	// TemperaturePreset names a preset of GET /api/temperature-presets;
	// Temperature instead sets the generation temperature (0-2), the other
	// roles keeping their ratio to it.
	TemperaturePreset string   `json:"temperature_preset,omitempty"`
	Temperature       *float64 `json:"temperature,omitempty"`
	EnhancedReasoning bool     `json:"enhanced_reasoning,omitempty"`
	LogicalInference  bool     `json:"logical_inference,omitempty"`
	NoveltyThreshold  *float64 `json:"novelty_threshold,omitempty"`
	NoNoveltyFilter   bool     `json:"no_novelty_filter,omitempty"`
	Tags              []string `json:"tags,omitempty" input:"line"`
}

// sparkParams turns the request into spark's parameters, as JSON.
func (req *GenerateIdeasRequest) sparkParams() (json.RawMessage, error) {
	p := map[string]any{"topic": req.Topic, "context": req.Context,
		"enhanced_reasoning": req.EnhancedReasoning, "logical_inference": req.LogicalInference, "novelty_filter": !req.NoNoveltyFilter}
	if req.NumCandidates != nil {
		p["num_candidates"] = *req.NumCandidates
		// Fewer ideas than the default number argued over: argue over all.
		if req.NumTopCandidates == nil && *req.NumCandidates >= 1 && *req.NumCandidates < spark.DefaultParams().NumTopCandidates {
			p["num_top_candidates"] = *req.NumCandidates
		}
	}
	if req.NumTopCandidates != nil {
		p["num_top_candidates"] = *req.NumTopCandidates
	}
	if req.NoveltyThreshold != nil {
		p["novelty_threshold"] = *req.NoveltyThreshold
	}
	switch {
	case req.TemperaturePreset != "" && req.Temperature != nil:
		return nil, unprocessable("temperature", "give either temperature_preset or temperature, not both")
	case req.TemperaturePreset != "":
		t, err := spark.Preset(req.TemperaturePreset)
		if err != nil {
			return nil, unprocessable("temperature_preset", "%v", err)
		}
		p["temperatures"] = t
	case req.Temperature != nil:
		if *req.Temperature < 0 || *req.Temperature > 2 {
			return nil, unprocessable("temperature", "temperature must be within 0..2, got %g", *req.Temperature)
		}
		p["temperatures"] = spark.FromBase(*req.Temperature)
	}
	return json.Marshal(p)
}

func (h *Handler) generateIdeas(w http.ResponseWriter, r *http.Request) error {
	var req GenerateIdeasRequest
	if err := decodeBody(w, r, h.cfg.MaxBodyBytes, &req); err != nil {
		return err
	}
	tags, err := checkTags("tags", req.Tags)
	if err != nil {
		return err
	}
	raw, err := req.sparkParams()
	if err != nil {
		return err
	}
	rec, err := h.runSync(r.Context(), "spark", raw, tags)
	if err != nil {
		return err
	}
	rep, err := spark.ReportOf(rec)
	if err != nil {
		return err
	}
	w.Header().Set("Location", "/api/runs/"+rec.ID)
	writeJSON(w, http.StatusOK, rep)
	return nil
}

// runSync runs pipeline name with raw parameters in this request, recorded
// like any run, and returns its record once it succeeded. Parameter errors
// name their field; a failed run is a 502 naming it.
func (h *Handler) runSync(ctx context.Context, name string, raw json.RawMessage, tags []string) (*madspark.Run, error) {
	def, err := h.cfg.Registry.Get(name)
	if err != nil {
		return nil, err
	}
	p, err := h.cfg.Registry.Decode(name, raw)
	if err != nil {
		return nil, paramsError("", err)
	}
	i := h.cfg.Info
	run, err := h.cfg.Engine.Start(ctx, engine.RunInfo{Pipeline: name, Mode: i.Mode, Provider: i.Provider, Model: i.Model, Params: p, Tags: tags,
		Subject: h.cfg.Registry.Subject(name, p)}, nil)
	if err != nil {
		return nil, err
	}
	// A synchronous run is refused (429) rather than queued behind a
	// provider that has as many calls waiting as it may.
	rctx, cancel := context.WithTimeout(middleware.RefuseWhenBusy(ctx), h.cfg.SyncTimeout)
	res, runErr := def.Run(rctx, run, p)
	cancel()
	switch cause := server.StopCause(ctx); {
	case runErr != nil && cause != nil:
		// The server stopped: the run is interrupted, resumable.
		runErr = fmt.Errorf("%w: %w", cause, runErr)
	case runErr != nil && ctx.Err() != nil:
		runErr = fmt.Errorf("%w: the client went away: %w", madspark.ErrCancelled, runErr)
	case runErr != nil && errors.Is(rctx.Err(), context.DeadlineExceeded):
		runErr = fmt.Errorf("run timed out after %s: %w", h.cfg.SyncTimeout, runErr)
	}
	if err := run.Finish(ctx, res, runErr); err != nil {
		return nil, err
	}
	if runErr != nil && errors.Is(runErr, middleware.ErrBusy) {
		e := errorf(http.StatusTooManyRequests, typeRateLimited, "", "run %s: the provider %s is busy with as many calls as allowed; retry later", run.ID(), i.Provider)
		e.retryAfter = llm.RetryAfterOf(runErr)
		return nil, e
	}
	if runErr != nil {
		return nil, &runFailed{runID: run.ID(), model: i.Provider + "/" + i.Model, msg: oneLine(runErr.Error())}
	}
	rec := run.Record()
	return &rec, nil
}

// RoleTemperatures are a preset's temperature per role.
type RoleTemperatures struct {
	IdeaGeneration float64 `json:"idea_generation"`
	Evaluation     float64 `json:"evaluation"`
	Advocacy       float64 `json:"advocacy"`
	Skepticism     float64 `json:"skepticism"`
	Improvement    float64 `json:"improvement"`
}

// Presets is the answer of GET /api/temperature-presets: spark's presets,
// and the one its default temperatures are.
type Presets struct {
	Presets map[string]RoleTemperatures `json:"presets"`
	Default string                      `json:"default"`
}

func (h *Handler) temperaturePresets(w http.ResponseWriter, _ *http.Request) error {
	out := Presets{Presets: map[string]RoleTemperatures{}}
	names := spark.PresetNames()
	for _, n := range names {
		t, err := spark.Preset(n)
		if err != nil {
			return err
		}
		out.Presets[n] = RoleTemperatures{IdeaGeneration: t.Generate, Evaluation: t.Evaluate, Advocacy: t.Advocate, Skepticism: t.Skeptic, Improvement: t.Improve}
		if t == spark.DefaultTemperatures() && out.Default == "" {
			out.Default = n
		}
	}
	if out.Default == "" && slices.Contains(names, "balanced") {
		out.Default = "balanced"
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}
