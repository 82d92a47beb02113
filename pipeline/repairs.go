package pipeline

import (
	"github.com/madspark/madspark/document"
	"github.com/madspark/madspark/llm"
)

// RepairsNote is " · N repairs" for a run whose replies were repaired, for
// a document's usage line; "" for none.
func RepairsNote(reps []llm.Repair) string {
	if len(reps) == 0 {
		return ""
	}
	return " · " + llm.RepairCount(len(reps))
}

// RepairsAppendix is a document section listing the repairs made to a
// run's replies, and false when there were none.
func RepairsAppendix(reps []llm.Repair) (document.Section, bool) {
	if len(reps) == 0 {
		return document.Section{}, false
	}
	t := &document.Table{Header: []string{"Step", "Agent", "Rule", "Where", "What was done"}}
	for _, r := range reps {
		t.Rows = append(t.Rows, []string{r.Step, r.Agent, r.Rule, r.Path, r.Action})
	}
	return document.Section{Title: "Repairs", Blocks: []document.Block{
		document.Text("Replies that broke a soft rule were kept and repaired as follows."), t}}, true
}
