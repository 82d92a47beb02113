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

// TestUsageLineCountsRepairs: the summary line every command prints ends
// with the number of repairs, and says nothing of them when there were none.
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
	if line := UsageLine(run, 1500*time.Millisecond); !strings.HasSuffix(line, "; 1.5s") {
		t.Fatalf("without repairs: %q", line)
	}
	run.Repair(llm.Repair{Agent: "debate.drafter", Rule: "length", Action: "kept a short handoff"})
	if line := UsageLine(run, time.Second); !strings.HasSuffix(line, "; 1.0s; 1 repair") {
		t.Fatalf("one repair: %q", line)
	}
	run.Repair(llm.Repair{Agent: "debate.drafter", Rule: "prose", Action: "prose taken as the answer"})
	if line := UsageLine(run, time.Second); !strings.HasSuffix(line, "; 1.0s; 2 repairs") {
		t.Fatalf("two repairs: %q", line)
	}
}
