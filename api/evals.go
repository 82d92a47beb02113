package api

import (
	"encoding/json"
	"net/http"
	"strings"

	"github.com/madspark/madspark"
	"github.com/madspark/madspark/eval"
	"github.com/madspark/madspark/failure"
)

// StartEvalRequest is the body of POST /api/evals: a pipeline measured
// against a single call to the same model.
type StartEvalRequest struct {
	Pipeline string `json:"pipeline" jsonschema:"required,description=The pipeline to measure"`
	// Topics is "builtin" (the pipeline's built-in set) or a list, each
	// item a one-line topic or an object of the pipeline's parameters.
	Topics any `json:"topics" jsonschema:"required,oneof_type=string;array,description=\"builtin\" or a list of one-line topics or objects of the pipeline's parameters"`
	// Limit keeps the first Limit topics.
	Limit         int    `json:"limit,omitempty" jsonschema:"minimum=1,description=At most this many topics (the first ones)"`
	Concurrency   int    `json:"concurrency,omitempty" jsonschema:"minimum=1,maximum=16,description=Topics worked at once (2 when left out)"`
	JudgeProvider string `json:"judge_provider,omitempty" jsonschema:"description=The judge's provider; the server's when left out"`
	JudgeModel    string `json:"judge_model,omitempty" jsonschema:"description=The judge's model"`
	// Fresh runs the pipeline even when an identical succeeded run exists.
	Fresh bool     `json:"fresh,omitempty"`
	Tags  []string `json:"tags,omitempty" input:"line"`
}

// Eval is an eval as GET /api/evals/{id} shows it: its run's state and,
// once it succeeded, its report.
type Eval struct {
	RunSummary
	Error string `json:"error,omitempty"`
	// Failure is what kind of failure Error is.
	Failure  *failure.Failure `json:"failure,omitempty"`
	Progress *Progress        `json:"progress" jsonschema:"nullable"`
	// Report is the eval's report once it succeeded, else null.
	Report *eval.Report `json:"report" jsonschema:"nullable"`
}

func evalLinks(id string) Links {
	return Links{Self: "/api/evals/" + id, Events: "/api/runs/" + id + "/events", WS: "/ws/runs/" + id}
}

func (h *Handler) startEval(w http.ResponseWriter, r *http.Request) error {
	var req StartEvalRequest
	if err := decodeBody(w, r, h.cfg.MaxBodyBytes, &req); err != nil {
		return err
	}
	if _, err := h.cfg.Registry.Get(eval.Name); err != nil {
		return unprocessable("pipeline", "this server does not run evals")
	}
	switch {
	case req.Pipeline == "":
		return unprocessable("pipeline", "pipeline is required")
	case req.Pipeline == eval.Name:
		return unprocessable("pipeline", "pipeline cannot be eval itself")
	case req.Limit < 0:
		return unprocessable("limit", "limit must be at least 1, got %d", req.Limit)
	}
	if _, err := h.cfg.Registry.Get(req.Pipeline); err != nil {
		return unprocessable("pipeline", "%v", err)
	}
	var topics []map[string]any
	var err error
	switch t := req.Topics.(type) {
	case string:
		if t != eval.BuiltinSource {
			return unprocessable("topics", `topics must be "builtin" or a list`)
		}
		data, berr := eval.Builtin(req.Pipeline)
		if berr != nil {
			return unprocessable("topics", "%v", berr)
		}
		topics, err = eval.Topics(h.cfg.Registry, req.Pipeline, "built-in topics", data, req.Limit)
	case []any:
		topics, err = eval.TopicList(h.cfg.Registry, req.Pipeline, t, req.Limit)
	default:
		return invalid("topics", `topics must be "builtin" or a list`)
	}
	if err != nil {
		return unprocessable("topics", "%v", err)
	}
	params := map[string]any{"pipeline": req.Pipeline, "topics": topics, "judge_provider": req.JudgeProvider,
		"judge_model": req.JudgeModel, "fresh": req.Fresh, "concurrency": 2}
	if req.Concurrency != 0 {
		params["concurrency"] = req.Concurrency
	}
	raw, err := json.Marshal(params)
	if err != nil {
		return err
	}
	tags, err := checkTags("tags", req.Tags)
	if err != nil {
		return err
	}
	rec, err := h.enqueue(r.Context(), StartRunRequest{Pipeline: eval.Name, Params: raw, Tags: tags})
	if err != nil {
		return err
	}
	w.Header().Set("Location", "/api/evals/"+rec.ID)
	writeJSON(w, http.StatusAccepted, StartRunResponse{RunID: rec.ID, Status: rec.Status, Links: evalLinks(rec.ID)})
	return nil
}

func (h *Handler) getEval(w http.ResponseWriter, r *http.Request) error {
	rec, err := h.loadRun(r.Context(), r.PathValue("id"))
	if err != nil {
		return err
	}
	if rec.Pipeline != eval.Name {
		return notFound("no eval %s (run %s is a %s run)", rec.ID, rec.ID, rec.Pipeline)
	}
	out := Eval{RunSummary: h.summary(rec), Error: h.errorText(r, rec.Error), Failure: h.failureOf(r, rec.Error)}
	if rec.Status == madspark.RunSucceeded {
		if out.Report, err = eval.ReportOf(rec); err != nil {
			return err
		}
	}
	last, err := h.cfg.Store.LastEvent(r.Context(), rec.ID)
	if err != nil {
		return err
	}
	if last != nil {
		out.Progress = &Progress{Stage: last.Stage, Progress: min(max(last.Progress, 0), 100), Message: last.Message}
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

// compareEvals answers GET /api/evals/compare?a=ID&b=ID: two succeeded
// evals side by side (eval.Compare), without a call.
func (h *Handler) compareEvals(w http.ResponseWriter, r *http.Request) error {
	var reps [2]*eval.Report
	for i, name := range []string{"a", "b"} {
		id := strings.TrimSpace(r.URL.Query().Get(name))
		if id == "" {
			return unprocessable(name, "%s is required: the ID of a succeeded eval", name)
		}
		rec, err := h.loadRun(r.Context(), id)
		if err != nil {
			return err
		}
		switch {
		case rec.Pipeline != eval.Name:
			return unprocessable(name, "%s: run %s is a %s run, not an eval", name, rec.ID, rec.Pipeline)
		case rec.Status != madspark.RunSucceeded:
			return conflict("%s: eval %s has not succeeded (it is %s)", name, rec.ID, rec.Status)
		}
		if reps[i], err = eval.ReportOf(rec); err != nil {
			return err
		}
	}
	writeJSON(w, http.StatusOK, eval.Compare(reps[0], reps[1]))
	return nil
}
