package app

import (
	"testing"

	"github.com/madspark/madspark/structured/replytest"
)

// TestAgentRepliesProperty: every built-in agent reads, against its own
// schema, each valid reply corrupted in the ways models corrupt JSON as
// the value the clean reply holds, with the repairs recorded; and never
// reads a reply missing what its schema requires as a value it does not
// hold (replytest).
func TestAgentRepliesProperty(t *testing.T) {
	agents, err := Agents("")
	if err != nil {
		t.Fatal(err)
	}
	if len(agents) < 20 {
		t.Fatalf("%d agents, want every built-in one", len(agents))
	}
	stats := &replytest.Stats{}
	t.Run("agents", func(t *testing.T) {
		for _, a := range agents {
			t.Run(a.Name, func(t *testing.T) {
				t.Parallel()
				replytest.Check(t, a.Spec, stats)
			})
		}
	})
	t.Logf("cases over %d agents, by format:\n%s", len(agents), stats)
}
