package api_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/madspark/madspark/api"
	"github.com/madspark/madspark/eval"
)

func TestEvalStartAndRead(t *testing.T) {
	hs := newHarness(t, options{workers: 1})
	r := hs.do("POST", "/api/evals", map[string]any{"pipeline": "debate", "topics": []any{"Is tea better than coffee? Weigh it.", map[string]any{"query": "Why is the sky blue? Explain the physics."}}, "concurrency": 2})
	var started api.StartRunResponse
	if r.status != 202 || json.Unmarshal(r.body, &started) != nil || r.header.Get("Location") != "/api/evals/"+started.RunID || started.Links.Self != "/api/evals/"+started.RunID {
		t.Fatalf("POST /api/evals: %d %s", r.status, r.body)
	}
	run := hs.wait(started.RunID)
	if run.Status != "succeeded" || run.Pipeline != "eval" {
		t.Fatalf("eval run %+v", run)
	}
	g := hs.do("GET", "/api/evals/"+started.RunID, nil)
	var ev api.Eval
	if g.status != 200 || json.Unmarshal(g.body, &ev) != nil || ev.Report == nil {
		t.Fatalf("GET /api/evals: %d %s", g.status, g.body)
	}
	rep := ev.Report
	if rep.Pipeline != "debate" || rep.N != 2 || rep.Wins+rep.Losses+rep.Ties != 2 || len(rep.Items) != 2 || rep.Items[1].Topic != "Why is the sky blue? Explain the physics." || !strings.Contains(rep.Notice, "proves nothing") {
		t.Fatalf("report %+v", rep)
	}
	// Each item links to its pipeline run, a run of its own.
	for _, it := range rep.Items {
		if child := hs.run(it.RunID); child.Pipeline != "debate" || child.Status != "succeeded" {
			t.Fatalf("pipeline run %+v", child)
		}
	}
	// A run that is not an eval is not an eval.
	if r := hs.do("GET", "/api/evals/"+rep.Items[0].RunID, nil); r.status != 404 {
		t.Fatalf("GET /api/evals/<debate run>: %d", r.status)
	}

	// Two evals side by side: one topic shared.
	r = hs.do("POST", "/api/evals", map[string]any{"pipeline": "debate", "topics": []any{"Is tea better than coffee? Weigh it."}})
	var second api.StartRunResponse
	r.json(t, &second)
	if run := hs.wait(second.RunID); run.Status != "succeeded" {
		t.Fatalf("second eval %+v", run)
	}
	c := hs.do("GET", "/api/evals/compare?a="+started.RunID+"&b="+second.RunID, nil)
	var cmp eval.Comparison
	if c.status != 200 || json.Unmarshal(c.body, &cmp) != nil || cmp.A.RunID != started.RunID || cmp.B.RunID != second.RunID ||
		cmp.A.N != 2 || cmp.B.N != 1 || len(cmp.Items) != 1 || cmp.Items[0].Topic != "Is tea better than coffee? Weigh it." || cmp.Notice == "" {
		t.Fatalf("GET /api/evals/compare: %d %s", c.status, c.body)
	}
	for _, bad := range []struct {
		query  string
		status int
		field  string
	}{
		{"?a=" + started.RunID, 422, "b"},
		{"?a=" + started.RunID + "&b=" + rep.Items[0].RunID, 422, "b"},
		{"?a=nope&b=" + second.RunID, 404, ""},
	} {
		r := hs.do("GET", "/api/evals/compare"+bad.query, nil)
		if r.status != bad.status || r.err(t).Error.Field != bad.field {
			t.Errorf("GET /api/evals/compare%s: %d %s, want %d naming %q", bad.query, r.status, r.body, bad.status, bad.field)
		}
	}
}

func TestEvalBadRequests(t *testing.T) {
	hs := newHarness(t, options{})
	for _, c := range []struct {
		body   any
		status int
		field  string
	}{
		{map[string]any{"pipeline": "nope", "topics": "builtin"}, 422, "pipeline"},
		{map[string]any{"pipeline": "eval", "topics": "builtin"}, 422, "pipeline"},
		{map[string]any{"topics": "builtin"}, 422, "pipeline"},
		{map[string]any{"pipeline": "proposal", "topics": "builtin"}, 422, "topics"},
		{map[string]any{"pipeline": "spark", "topics": "some"}, 422, "topics"},
		{map[string]any{"pipeline": "spark", "topics": []any{}}, 422, "topics"},
		{map[string]any{"pipeline": "spark", "topics": []any{7}}, 422, "topics"},
		{map[string]any{"pipeline": "spark", "topics": []any{map[string]any{"topic": "x", "colour": 1}}}, 422, "topics"},
		{map[string]any{"pipeline": "spark", "topics": 7}, 400, "topics"},
		{map[string]any{"pipeline": "spark", "topics": "builtin", "limit": -1}, 422, "limit"},
		{map[string]any{"pipeline": "spark", "topics": "builtin", "concurrency": 99}, 422, "params.concurrency"},
		{map[string]any{"pipeline": "spark", "topics": "builtin", "judge_provider": "acme"}, 422, "params.judge_provider"},
		{map[string]any{"pipeline": "spark", "topics": "builtin", "extra": 1}, 400, "extra"},
	} {
		r := hs.do("POST", "/api/evals", c.body)
		var e api.ErrorBody
		if r.status != c.status || json.Unmarshal(r.body, &e) != nil || e.Error.Field != c.field {
			t.Errorf("%v: %d %s, want %d naming %s", c.body, r.status, r.body, c.status, c.field)
		}
	}
	if runs := hs.do("GET", "/api/runs?pipeline=eval", nil); !strings.Contains(string(runs.body), `"runs":[]`) {
		t.Fatalf("a bad request queued an eval: %s", runs.body)
	}
}
