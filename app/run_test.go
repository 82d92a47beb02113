package app

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/madspark/madspark/engine"
	"github.com/madspark/madspark/llm"
	"github.com/madspark/madspark/store/sqlite"
)

// TestUsageLineCountsRepairs: the summary line every command prints says
// the cost and time, and RepairNote adds the number of repairs once,
// nothing when there were none.
func TestUsageLineCountsRepairs(t *testing.T) {
	ctx := context.Background()
	db, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "m.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	run, err := (&engine.Engine{Store: db}).Start(ctx, engine.RunInfo{Pipeline: "debate", Mode: "live"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	line := func() string { return UsageLine(run, time.Second) + RepairNote(len(run.Repairs())) }
	if line := UsageLine(run, 1500*time.Millisecond) + RepairNote(len(run.Repairs())); !strings.HasSuffix(line, "; 1.5s") {
		t.Fatalf("without repairs: %q", line)
	}
	run.Repair(llm.Repair{Agent: "debate.drafter", Rule: "length", Action: "kept a short handoff"})
	if l := line(); !strings.HasSuffix(l, "; 1.0s; 1 repair") || strings.Count(l, "repair") != 1 {
		t.Fatalf("one repair: %q", l)
	}
	run.Repair(llm.Repair{Agent: "debate.drafter", Rule: "prose", Action: "prose taken as the answer"})
	if l := line(); !strings.HasSuffix(l, "; 1.0s; 2 repairs") || strings.Count(l, "repair") != 1 {
		t.Fatalf("two repairs: %q", l)
	}
}
