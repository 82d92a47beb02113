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

// TestEscaping: what a terminal would act on is shown instead, also when a
// character or a line break is cut between two writes; plain text, tabs,
// line breaks and UTF-8 pass unchanged.
func TestEscaping(t *testing.T) {
	var buf bytes.Buffer
	e := Escaping(&buf)
	for _, s := range []string{"café\tok\r", "\nnext ", "\x1b]0;pwned\x07\x1b[2J", "cut \xc2", "\x9b31m", " half \xe2\x80", "\xae bidi", " lone\r", "x end \xff", "\xc3"} {
		if n, err := e.Write([]byte(s)); n != len(s) || err != nil {
			t.Fatalf("Write(%q) = %d, %v", s, n, err)
		}
	}
	if err := e.Flush(); err != nil {
		t.Fatal(err)
	}
	want := "café\tok\r\nnext \\x1b]0;pwned\\x07\\x1b[2Jcut \\u009b31m half \\u202e bidi lone\\rx end \\xff\\xc3"
	if got := buf.String(); got != want {
		t.Fatalf("got  %q\nwant %q", got, want)
	}
}
