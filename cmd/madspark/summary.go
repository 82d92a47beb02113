package main

import (
	"fmt"
	"time"

	"github.com/madspark/madspark/engine"
	"github.com/madspark/madspark/llm"
)

// usageLine is the summary line of a finished run, as every command prints
// it: what the run cost, how long it took and, when replies were repaired,
// how many repairs were made ("6 calls …; 12.3s; 3 repairs").
func usageLine(run *engine.Run, elapsed time.Duration) string {
	return fmt.Sprintf("%s; %.1fs%s", run.Usage(), elapsed.Seconds(), repairNote(len(run.Repairs())))
}

// repairNote is "; N repairs" for n > 0, and "" otherwise.
func repairNote(n int) string {
	if n == 0 {
		return ""
	}
	return "; " + llm.RepairCount(n)
}
