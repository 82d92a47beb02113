package proposal

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/madspark/madspark/engine"
	"github.com/madspark/madspark/pipeline"
	"github.com/madspark/madspark/provider/mock"
)

// TestDefinitionRunsFromJSON starts a proposal the way the queue and the API
// do — parameters decoded by the registry — and renders its files from the
// stored run.
func TestDefinitionRunsFromJSON(t *testing.T) {
	def, err := Definition(offline(), nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	reg := pipeline.NewRegistry()
	if err := reg.Register(def); err != nil {
		t.Fatal(err)
	}
	prof, err := json.Marshal(profile(10))
	if err != nil {
		t.Fatal(err)
	}
	var pe *pipeline.ParamsError
	if _, err := reg.Decode("proposal", json.RawMessage(`{"profile":`+string(prof)+`,"max_refinements":11}`)); !errors.As(err, &pe) || !strings.Contains(err.Error(), "max_refinements") {
		t.Errorf("max_refinements 11: %v", err)
	}
	bad := strings.Replace(string(prof), `"weekly_hours":10`, `"weekly_hours":0`, 1)
	if _, err := reg.Decode("proposal", json.RawMessage(`{"profile":`+bad+`}`)); !errors.As(err, &pe) || !strings.Contains(err.Error(), "weekly_hours") {
		t.Errorf("weekly_hours 0: %v", err)
	}
	p, err := reg.Decode("proposal", json.RawMessage(`{"profile":`+string(prof)+`}`))
	if err != nil {
		t.Fatal(err)
	}
	if got := def.Topic(p); got != profile(10).ResearchArea {
		t.Errorf("topic %q", got)
	}

	db := newDB(t)
	e := &engine.Engine{Store: db, Client: mock.New(MockResponders())}
	ctx := context.Background()
	r, err := e.Start(ctx, engine.RunInfo{Pipeline: "proposal", Mode: "mock", Provider: mock.Name, Model: mock.Model, Params: p}, nil)
	if err != nil {
		t.Fatal(err)
	}
	res, err := def.Run(ctx, r, p)
	if err := r.Finish(ctx, res, err); err != nil {
		t.Fatal(err)
	}
	rec, err := db.Run(ctx, r.ID())
	if err != nil {
		t.Fatal(err)
	}
	files, err := def.Files(rec)
	if err != nil {
		t.Fatal(err)
	}
	if len(files) != 3 || !bytes.HasPrefix(files["proposal.pdf"], []byte("%PDF-")) {
		t.Fatalf("files %d, pdf starts %q", len(files), files["proposal.pdf"][:min(8, len(files["proposal.pdf"]))])
	}
	title := res.(*Result).Title
	if md := string(files["proposal.md"]); !strings.Contains(md, title) || !strings.Contains(md, "MOCK DATA") {
		t.Errorf("markdown lacks the title %q or the mock notice", title)
	}
	var env struct {
		RunID  string `json:"run_id"`
		Notice string `json:"notice"`
		Result Result `json:"result"`
	}
	if err := json.Unmarshal(files["proposal.json"], &env); err != nil || env.RunID != r.ID() || env.Result.Title != title || !strings.Contains(env.Notice, "MOCK DATA") {
		t.Errorf("proposal.json: %v, run %q, notice %q", err, env.RunID, env.Notice)
	}
}
