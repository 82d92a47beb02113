package structured

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"sort"
	"strings"
	"unicode"
	"unicode/utf8"
)

// ErrNoJSON is reported when a reply holds no JSON value.
var ErrNoJSON = errors.New("no JSON value in reply")

// ErrTruncated is reported when a reply was cut off before the values it
// needs were complete, as when it reached the token limit.
var ErrTruncated = errors.New("reply is truncated JSON")

// candidate is one JSON value found in a reply: the whole reply, the body
// of a code fence, or an outermost bracketed span in prose. Inner spans of
// a value are never candidates of their own.
type candidate struct {
	// v is the decoded value (objects as *object), when err is nil.
	v   any
	err error
	// fixes are what was done to the text to read it: the fence or prose
	// set aside, the syntax repaired, a cut-off tail dropped.
	fixes []fixed
	// truncated: the span was cut off, and v holds its complete part.
	truncated bool
	// start and end delimit the span in the reply (bytes).
	start, end int
	// fenced: the span is the body of a code fence.
	fenced bool
	// format: the value was read from a format other than JSON; labels:
	// from label-value text.
	format, labels bool
}

var fenceRE = regexp.MustCompile("```[A-Za-z0-9_+-]*[ \t]*")

// thinkRE is a reasoning model's thoughts: <think>…</think> and the like,
// or an opening tag never closed (its thoughts run to the end).
var thinkRE = regexp.MustCompile(`(?is)<(think|thinking|reasoning|thought)>.*?(</(?:think|thinking|reasoning|thought)>|\z)`)

// findCandidates returns the JSON values a reply may hold, in the order
// they appear: code fence bodies that start with a bracket, then the
// outermost bracketed values of the text outside them; the whole text when
// it is a JSON scalar. Each is read with its syntax repaired where needed.
// It reads the reply once, front to back: a value that cannot be read is
// left where reading it stopped, and the search goes on from there.
func findCandidates(ctx context.Context, text string) []candidate {
	var out []candidate
	masked := []byte(text)
	// A reasoning model's thoughts are not its answer, drafts included.
	for _, loc := range thinkRE.FindAllStringIndex(text, -1) {
		for j := loc[0]; j < loc[1]; j++ {
			masked[j] = ' '
		}
	}
	// Fences: ```lang … ``` (an unclosed fence runs to the end).
	fences := fenceRE.FindAllIndex(masked, -1)
	for i := 0; i < len(fences); i += 2 {
		bodyStart := fences[i][1]
		bodyEnd, closeEnd := len(text), len(text)
		if i+1 < len(fences) {
			bodyEnd, closeEnd = fences[i+1][0], fences[i+1][1]
		}
		body := text[bodyStart:bodyEnd]
		trimmed := strings.TrimLeft(body, " \t\r\n")
		if trimmed == "" || (trimmed[0] != '{' && trimmed[0] != '[') {
			continue
		}
		off := bodyStart + len(body) - len(trimmed)
		c := readSpan(text[:bodyEnd], off)
		c.fenced = true
		out = append(out, c)
		for j := fences[i][0]; j < closeEnd; j++ {
			masked[j] = ' '
		}
	}
	rest := string(masked)
	for i := 0; i < len(rest); {
		if ctx.Err() != nil {
			return nil
		}
		k := strings.IndexAny(rest[i:], "{[")
		if k < 0 {
			break
		}
		start := i + k
		c := readSpan(rest, start)
		out = append(out, c)
		// Go on after the value, or from where reading it stopped.
		i = max(c.end, start+1)
	}
	if len(out) == 0 {
		if t := strings.TrimSpace(text); t != "" && json.Valid([]byte(t)) {
			v, err := decodeOrdered([]byte(t))
			off := strings.Index(text, t)
			out = append(out, candidate{v: v, err: err, start: off, end: off + len(t)})
		}
	}
	sort.SliceStable(out, func(a, b int) bool { return out[a].start < out[b].start })
	if len(out) == 0 {
		return nil
	}
	around := newAround(text, fences)
	for i := range out {
		if out[i].err == nil {
			out[i].fixes = append(around.fixes(out[i]), out[i].fixes...)
		}
	}
	return out
}

// around counts, for the record of a repair, the characters of a reply
// outside a value: prose, tags, not the code fence's marks.
type around struct {
	// runes[k] is the count of non-space runes in the reply's first k
	// bytes, fence marks left out.
	runes []int32
}

func newAround(text string, fences [][]int) around {
	skip := make([]bool, len(text))
	for _, f := range fences {
		for j := f[0]; j < f[1]; j++ {
			skip[j] = true
		}
	}
	runes := make([]int32, len(text)+1)
	for i := 0; i < len(text); {
		r, size := utf8.DecodeRuneInString(text[i:])
		n := runes[i]
		if !skip[i] && !unicode.IsSpace(r) {
			n++
		}
		for j := 1; j <= size; j++ {
			runes[i+j] = n
		}
		i += size
	}
	return around{runes}
}

// fixes records what of the reply was set aside to read c: a code fence,
// and prose or tags around the value.
func (a around) fixes(c candidate) []fixed {
	var out []fixed
	if c.fenced {
		out = append(out, fixed{rule: "syntax", action: "JSON taken from a code fence"})
	}
	total := a.runes[len(a.runes)-1]
	if n := total - (a.runes[c.end] - a.runes[c.start]); n > 0 {
		out = append(out, fixed{rule: "syntax", action: fmt.Sprintf("text around the JSON set aside (%d characters)", n)})
	}
	return out
}

// readSpan reads the value that starts at text[start], a bracket,
// repairing its syntax where it is not JSON.
func readSpan(text string, start int) candidate {
	r := readLenient(text, start)
	c := candidate{start: start, end: r.end, truncated: r.truncated}
	switch {
	case r.err != nil:
		c.end = r.errAt
		if le, ok := r.err.(*lazyError); ok {
			le.prefix = "invalid JSON: "
			c.err = le
		} else {
			c.err = fmt.Errorf("invalid JSON: %w", r.err)
		}
		return c
	case r.empty:
		c.err = ErrTruncated
		return c
	}
	c.v = r.v
	what := r.flags.words()
	if r.truncated {
		what = append(what, "closing brackets added")
		if r.droppedTail {
			c.fixes = append(c.fixes, fixed{rule: "syntax", action: "reply cut off: its incomplete last value dropped"})
		}
	}
	if len(what) > 0 {
		c.fixes = append(c.fixes, fixed{rule: "syntax", action: "invalid JSON repaired: " + strings.Join(what, ", ")})
	}
	return c
}

func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }
