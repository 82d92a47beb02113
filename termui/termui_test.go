package termui

import (
	"bytes"
	"testing"
)

// TestBatchProgressOnATerminal draws the bar of a batch, as a terminal would get it.
func TestBatchProgressOnATerminal(t *testing.T) {
	var buf bytes.Buffer
	NewBatchBar(&buf).Draw(3, 4, 1, 1)
	if got := buf.String(); got != "\r\033[K██████████████████░░░░░░ 3/4 done · 1 failed · 1 running · 0s" {
		t.Fatalf("bar %q", got)
	}
}
