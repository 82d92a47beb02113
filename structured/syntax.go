package structured

import (
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"sort"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/kaptinlin/jsonrepair"
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
}

var fenceRE = regexp.MustCompile("```[A-Za-z0-9_+-]*[ \t]*")

// thinkRE is a reasoning model's thoughts: <think>…</think> and the like,
// or an opening tag never closed (its thoughts run to the end).
var thinkRE = regexp.MustCompile(`(?is)<(think|thinking|reasoning|thought)>.*?(</(?:think|thinking|reasoning|thought)>|\z)`)

// findCandidates returns the JSON values a reply may hold, in the order
// they appear: code fence bodies that start with a bracket, then the
// outermost bracketed spans of the text outside them; the whole text when
// it is a JSON scalar. Each is decoded, its syntax repaired where needed.
func findCandidates(text string) []candidate {
	var out []candidate
	masked := []byte(text)
	// A reasoning model's thoughts are not its answer, drafts included.
	for _, loc := range thinkRE.FindAllStringIndex(text, -1) {
		for j := loc[0]; j < loc[1]; j++ {
			masked[j] = ' '
		}
	}
	// Fences: ```lang … ``` (an unclosed fence runs to the end).
	locs := fenceRE.FindAllStringIndex(string(masked), -1)
	for i := 0; i < len(locs); i += 2 {
		bodyStart := locs[i][1]
		bodyEnd, closeEnd := len(text), len(text)
		if i+1 < len(locs) {
			bodyEnd, closeEnd = locs[i+1][0], locs[i+1][1]
		}
		body := text[bodyStart:bodyEnd]
		trimmed := strings.TrimSpace(body)
		if trimmed == "" || (trimmed[0] != '{' && trimmed[0] != '[') {
			continue
		}
		off := bodyStart + strings.Index(body, trimmed)
		c := readSpan(text, off, off+len(trimmed))
		c.fenced = true
		out = append(out, c)
		for j := locs[i][0]; j < closeEnd; j++ {
			masked[j] = ' '
		}
	}
	rest := string(masked)
	for i := 0; i < len(rest); {
		if rest[i] != '{' && rest[i] != '[' {
			i++
			continue
		}
		sc := scan(rest[i:])
		end := i + sc.end
		c := readSpan(text, i, end)
		out = append(out, c)
		if !sc.closed && c.err != nil {
			// An unclosed bracket that is no JSON (prose such as "[see
			// below"): the values after it are outermost ones.
			i++
			continue
		}
		i = end
	}
	if len(out) == 0 {
		if t := strings.TrimSpace(text); t != "" && json.Valid([]byte(t)) {
			v, err := decodeOrdered([]byte(t))
			off := strings.Index(text, t)
			out = append(out, candidate{v: v, err: err, start: off, end: off + len(t)})
		}
	}
	sort.SliceStable(out, func(a, b int) bool { return out[a].start < out[b].start })
	for i := range out {
		out[i].fixes = append(aroundFixes(text, out[i]), out[i].fixes...)
	}
	return out
}

// aroundFixes records what of the reply was set aside to read c: a code
// fence, and prose or tags around the value.
func aroundFixes(text string, c candidate) []fixed {
	var out []fixed
	if c.fenced {
		out = append(out, fixed{rule: "syntax", action: "JSON taken from a code fence"})
	}
	outside := fenceRE.ReplaceAllString(text[:c.start]+" "+text[c.end:], " ")
	if n := utf8.RuneCountInString(strings.TrimSpace(outside)); n > 0 {
		out = append(out, fixed{rule: "syntax", action: fmt.Sprintf("text around the JSON set aside (%d characters)", n)})
	}
	return out
}

// readSpan decodes text[start:end], a span that starts with a bracket,
// repairing its syntax if it is not valid JSON.
func readSpan(text string, start, end int) candidate {
	span := text[start:end]
	c := candidate{start: start, end: end}
	if json.Valid([]byte(span)) {
		c.v, c.err = decodeOrdered([]byte(span))
		return c
	}
	sc := scan(span)
	src := span
	if stringified(span) {
		// JSON sent as the text of a string, its quotes escaped: scan
		// cannot follow it, jsonrepair unescapes it.
		sc.closed = true
	}
	if !sc.closed {
		c.truncated = true
		if sc.safe == 0 {
			c.err = ErrTruncated
			return c
		}
		if strings.TrimSpace(span[sc.safe:]) != "" {
			c.fixes = append(c.fixes, fixed{rule: "syntax", action: "reply cut off: its incomplete last value dropped"})
		}
		src = span[:sc.safe]
	}
	repaired, err := repair(src)
	var re *jsonrepair.Error
	if err != nil && errors.As(err, &re) && errors.Is(err, jsonrepair.ErrUnexpectedCharacter) && re.Position > 0 {
		// The value ended before the span did: the rest is prose.
		if off := runeOffset(src, re.Position); off < len(src) {
			cut := src[:off]
			if r2, err2 := repair(cut); err2 == nil {
				c.end = start + len(cut)
				repaired, err = r2, nil
			}
		}
	}
	if err != nil {
		c.err = fmt.Errorf("invalid JSON: %s", oneLine(err.Error()))
		return c
	}
	c.v, err = decodeOrdered([]byte(repaired))
	if err != nil {
		c.err = fmt.Errorf("invalid JSON: %w", err)
		return c
	}
	what := sc.flags.words()
	if !sc.closed {
		what = append(what, "closing brackets added")
	}
	if len(what) == 0 {
		what = []string{"JSON syntax"}
	}
	c.fixes = append(c.fixes, fixed{rule: "syntax", action: "invalid JSON repaired: " + strings.Join(what, ", ")})
	return c
}

// repair repairs the syntax of s with jsonrepair, keeping the escape
// sequences of its well-formed strings as they are: jsonrepair takes some
// texts with backslashes for file paths and doubles their backslashes,
// which would change the text. The escapes are set aside as runes of the
// private use area, absent from the reply, and put back after.
func repair(s string) (string, error) {
	if strings.ContainsAny(s, escapeHolders) || stringified(s) {
		// A reply that holds such runes already, or JSON sent as the
		// text of a string (jsonrepair unescapes it): as it is.
		return jsonrepair.Repair(s)
	}
	var b strings.Builder
	// at[k] is the rune of s that rune k of the protected text stands
	// for, to say where an error is in s.
	var at []int
	in, r := false, 0
	for i := 0; i < len(s); {
		ch := s[i]
		switch {
		case !in:
			in = ch == '"'
		case ch == '"':
			in = false
		case ch == '\\' && i+1 < len(s):
			if k := strings.IndexByte(escapeLetters, s[i+1]); k >= 0 {
				b.WriteRune([]rune(escapeHolders)[k])
				at = append(at, r)
				i, r = i+2, r+2
				continue
			}
		}
		_, size := utf8.DecodeRuneInString(s[i:])
		b.WriteString(s[i : i+size])
		at = append(at, r)
		i, r = i+size, r+1
	}
	out, err := jsonrepair.Repair(b.String())
	var re *jsonrepair.Error
	if errors.As(err, &re) {
		pos := r
		if re.Position < len(at) {
			pos = at[re.Position]
		}
		return "", &jsonrepair.Error{Message: re.Message, Position: pos, Err: re.Err}
	}
	if err != nil {
		return "", err
	}
	return escapeRestorer.Replace(out), nil
}

// escapeLetters are the letters of JSON's escape sequences, and
// escapeHolders the runes that stand for them while jsonrepair runs.
const (
	escapeLetters = `"\/bfnrtu`
	escapeHolders = "\ue000\ue001\ue002\ue003\ue004\ue005\ue006\ue007\ue008"
)

var escapeRestorer = strings.NewReplacer(
	"\ue000", `\"`, "\ue001", `\\`, "\ue002", `\/`, "\ue003", `\b`, "\ue004", `\f`,
	"\ue005", `\n`, "\ue006", `\r`, "\ue007", `\t`, "\ue008", `\u`)

// stringified reports whether s is JSON whose quotes are escaped, as it
// is inside a string: {\"a\": 1}.
func stringified(s string) bool {
	s = strings.TrimSpace(s)
	return strings.HasPrefix(s, `{\"`) || strings.HasPrefix(s, `[\"`)
}

// runeOffset returns the byte offset in s of its rune n (len(s) past its
// end), counting each byte of invalid UTF-8 as a rune, as []rune(s) does.
func runeOffset(s string, n int) int {
	i := 0
	for k := 0; k < n && i < len(s); k++ {
		_, size := utf8.DecodeRuneInString(s[i:])
		i += size
	}
	return i
}

func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

// syntaxFlags are the departures from JSON that scan noticed, for the
// record of a repair.
type syntaxFlags struct {
	trailingComma, comments, pyLiterals, jsLiterals, singleQuotes, curlyQuotes, bareKeys bool
}

func (f syntaxFlags) words() []string {
	var out []string
	for _, w := range []struct {
		on   bool
		word string
	}{
		{f.trailingComma, "trailing comma"}, {f.comments, "comments"},
		{f.pyLiterals, "Python literals"}, {f.jsLiterals, "JavaScript literals"},
		{f.singleQuotes, "single quotes"}, {f.curlyQuotes, "curly quotes"},
		{f.bareKeys, "unquoted keys"},
	} {
		if w.on {
			out = append(out, w.word)
		}
	}
	return out
}

// scanned is what scan found of a span.
type scanned struct {
	// end is the length of the span: just past the bracket that closes
	// the first one, or the whole text when it is not closed.
	end    int
	closed bool
	// safe is the length of the longest prefix that ends just after a
	// complete value inside the span (a member's value, an item), so that
	// closing its open brackets gives a value the reply wholly held; 0
	// when there is none.
	safe  int
	flags syntaxFlags
}

// scan walks a span that starts with a bracket, as far as the bracket
// that closes it, tolerating what models write around JSON's rules:
// single and curly quotes, comments, bare words.
func scan(s string) scanned {
	type frame struct{ obj, expectKey bool }
	var (
		stack    []frame
		res      scanned
		quote    rune // the closing quote of the string being read, or 0
		isKey    bool
		escaped  bool
		runStart = -1 // start of a bare word or number
		prev     rune // the previous rune outside strings, spaces and comments
	)
	inKeyPosition := func() bool {
		return len(stack) > 0 && stack[len(stack)-1].obj && stack[len(stack)-1].expectKey
	}
	endRun := func(i int) {
		if runStart < 0 {
			return
		}
		switch s[runStart:i] {
		case "True", "False", "None":
			res.flags.pyLiterals = true
		case "undefined", "NaN", "Infinity":
			res.flags.jsLiterals = true
		}
		if inKeyPosition() {
			res.flags.bareKeys = true
		} else {
			res.safe = i
		}
		runStart = -1
	}
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		if quote != 0 {
			switch {
			case escaped:
				escaped = false
			case r == '\\':
				escaped = true
			case r == quote:
				quote = 0
				if !isKey {
					res.safe = i + size
				}
				prev = r
			}
			i += size
			continue
		}
		if runStart >= 0 && (unicode.IsSpace(r) || strings.ContainsRune(",:{}[]\"/", r)) {
			endRun(i)
		}
		switch {
		case unicode.IsSpace(r):
			i += size
			continue
		case strings.HasPrefix(s[i:], "//"):
			res.flags.comments = true
			if nl := strings.IndexByte(s[i:], '\n'); nl >= 0 {
				i += nl
			} else {
				i = len(s)
			}
			continue
		case strings.HasPrefix(s[i:], "/*"):
			res.flags.comments = true
			if e := strings.Index(s[i+2:], "*/"); e >= 0 {
				i += e + 4
			} else {
				i = len(s)
			}
			continue
		case r == '"' || ((r == '\'' || r == '“') && strings.ContainsRune("{[,:", prev)):
			quote = r
			switch r {
			case '\'':
				res.flags.singleQuotes = true
			case '“':
				quote = '”'
				res.flags.curlyQuotes = true
			}
			isKey = inKeyPosition()
		case r == '{' || r == '[':
			stack = append(stack, frame{obj: r == '{', expectKey: r == '{'})
		case r == '}' || r == ']':
			if prev == ',' {
				res.flags.trailingComma = true
			}
			if len(stack) > 0 {
				stack = stack[:len(stack)-1]
			}
			if len(stack) == 0 {
				res.end, res.closed = i+size, true
				return res
			}
			res.safe = i + size
		case r == ':':
			if len(stack) > 0 {
				stack[len(stack)-1].expectKey = false
			}
		case r == ',':
			if len(stack) > 0 && stack[len(stack)-1].obj {
				stack[len(stack)-1].expectKey = true
			}
		default:
			if runStart < 0 {
				runStart = i
			}
		}
		prev = r
		i += size
	}
	res.end = len(s)
	return res
}
