package structured

import (
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"strings"
	"unicode/utf8"
)

// The lenient reader of JSON as models write it. It reads one value that
// starts at a bracket in one pass, each byte looked at a bounded number of
// times, so that its time and memory grow with the length of what it reads
// and no more, whatever the text. It takes what models write around JSON's
// rules where the meaning is plain, and says which it took (syntaxFlags):
//
//   - strings between single quotes ('a'), curly quotes (“a”), or double
//     quotes holding unescaped double quotes: a quote ends a string only
//     when a comma, a colon, a closing bracket, a line break, a comment or
//     the end follows it ("he said "hi" today" is one text);
//   - keys without quotes ({title: "x"}), texts without quotes as the
//     value of a member ({"verdict": approve});
//   - comments (// and /* */), trailing commas, commas left out between
//     values;
//   - Python's True, False and None, JavaScript's undefined;
//   - JSON5 numbers: hexadecimal (0x1F), a leading + or point (+7, .5), a
//     trailing point (5.); Infinity and NaN are read as what they are,
//     which no finite number field takes;
//   - JSON sent as the text of a string ({\"a\": 1});
//   - a value cut off at its end: the brackets still open are closed, the
//     incomplete last member or item dropped.
//
// Anything else is an error at the byte where reading stopped; the value
// is never guessed.

// maxDepth bounds the nesting of a value read.
const maxDepth = 512

// nonFinite is Infinity, -Infinity or NaN as a reply wrote it: a number
// no field of the schema can take.
type nonFinite string

// lenientResult is one value read by readLenient.
type lenientResult struct {
	v any
	// end is just past the value's last byte.
	end int
	// truncated: the text ended inside the value; v holds what was
	// complete. droppedTail: an incomplete last member or item was set
	// aside.
	truncated, droppedTail bool
	// empty: the text ended before any member or item was complete.
	empty bool
	flags syntaxFlags
	// err and errAt: why, and where (a byte offset), the value could not
	// be read.
	err   error
	errAt int
}

// syntaxFlags are the departures from JSON that the reader took, for the
// record of a repair.
type syntaxFlags struct {
	trailingComma, comments, pyLiterals, jsLiterals, singleQuotes, curlyQuotes, bareKeys, bareValues,
	missingCommas, unescapedQuotes, json5Numbers, stringified bool
}

func (f syntaxFlags) words() []string {
	var out []string
	for _, w := range []struct {
		on   bool
		word string
	}{
		{f.stringified, "JSON sent as a string"},
		{f.trailingComma, "trailing comma"}, {f.missingCommas, "missing commas"}, {f.comments, "comments"},
		{f.pyLiterals, "Python literals"}, {f.jsLiterals, "JavaScript literals"},
		{f.singleQuotes, "single quotes"}, {f.curlyQuotes, "curly quotes"},
		{f.unescapedQuotes, "unescaped quotes"},
		{f.bareKeys, "unquoted keys"}, {f.bareValues, "unquoted texts"},
		{f.json5Numbers, "JSON5 numbers"},
	} {
		if w.on {
			out = append(out, w.word)
		}
	}
	return out
}

// readLenient reads the value that starts at text[start], a bracket.
func readLenient(text string, start int) lenientResult {
	if stringifiedAt(text, start) {
		return readStringified(text, start)
	}
	p := &lenient{s: text, i: start}
	v, st := p.value(ctxTop, 0)
	res := lenientResult{v: v, end: p.i, flags: p.flags, truncated: p.eof, droppedTail: p.dropped}
	switch {
	case p.err != nil:
		res.v, res.err, res.errAt = nil, p.err, p.errAt
	case st == incomplete:
		res.v, res.empty = nil, true
	}
	return res
}

// readStringified reads JSON whose quotes are escaped, as it is inside a
// string ({\"a\": 1}): one level of escapes taken off, as far as the
// bracket that closes the first, then read.
func readStringified(text string, start int) lenientResult {
	var b strings.Builder
	// at[k] is the offset in text of byte k of the unescaped text.
	var at []int
	depth, inString, escaped := 0, false, false
	end := len(text)
	for i := start; i < len(text); {
		c, n := text[i], 1
		if c == '\\' && i+1 < len(text) {
			switch text[i+1] {
			case '"', '\\', '/':
				c, n = text[i+1], 2
			case 'n':
				c, n = '\n', 2
			case 't':
				c, n = '\t', 2
			case 'r':
				c, n = '\r', 2
			}
		}
		b.WriteByte(c)
		at = append(at, i)
		i += n
		switch {
		case escaped:
			escaped = false
		case inString && c == '\\':
			escaped = true
		case c == '"':
			inString = !inString
		case !inString && (c == '{' || c == '['):
			depth++
		case !inString && (c == '}' || c == ']'):
			depth--
		}
		if depth == 0 {
			end = i
			break
		}
	}
	at = append(at, end)
	res := readLenient(b.String(), 0)
	res.flags.stringified = true
	res.end = at[min(res.end, len(at)-1)]
	res.errAt = at[min(res.errAt, len(at)-1)]
	return res
}

// stringifiedAt reports whether the value at text[i] is JSON whose quotes
// are escaped: {\" or [\".
func stringifiedAt(text string, i int) bool {
	return i+2 < len(text) && (text[i] == '{' || text[i] == '[') && text[i+1] == '\\' && text[i+2] == '"'
}

type lenient struct {
	s     string
	i     int
	flags syntaxFlags
	// eof: the text ended inside the value; dropped: an incomplete part
	// was set aside.
	eof, dropped bool
	err          error
	errAt        int
}

// readCtx is where a value stands: the top, a member's value, an item.
type readCtx int

const (
	ctxTop readCtx = iota
	ctxMember
	ctxItem
)

// status is how reading a value ended.
type status int

const (
	complete   status = iota
	incomplete        // the text ended inside it
	failed            // p.err says why
)

func (p *lenient) fail(at int, format string, args ...any) status {
	if p.err == nil {
		p.err, p.errAt = &lazyError{format: format, args: args}, at
	}
	return failed
}

// lazyError is an error whose message is formatted only when asked for:
// a reply may hold many values that cannot be read, and most of their
// messages are never shown.
type lazyError struct {
	prefix string
	format string
	args   []any
}

func (e *lazyError) Error() string { return e.prefix + fmt.Sprintf(e.format, e.args...) }

// space skips white space and comments; it reports whether a line break
// was among them.
func (p *lenient) space() bool {
	nl := false
	for p.i < len(p.s) {
		switch c := p.s[p.i]; {
		case c == '\n':
			nl = true
			p.i++
		case c == ' ' || c == '\t' || c == '\r':
			p.i++
		case c == '/' && p.i+1 < len(p.s) && p.s[p.i+1] == '/':
			p.flags.comments = true
			if k := strings.IndexByte(p.s[p.i:], '\n'); k >= 0 {
				p.i += k
			} else {
				p.i = len(p.s)
			}
		case c == '/' && p.i+1 < len(p.s) && p.s[p.i+1] == '*':
			p.flags.comments = true
			if k := strings.Index(p.s[p.i+2:], "*/"); k >= 0 {
				p.i += k + 4
			} else {
				p.i = len(p.s)
			}
		case c == 0xc2 && p.i+1 < len(p.s) && p.s[p.i+1] == 0xa0: // no-break space
			p.i += 2
		default:
			return nl
		}
	}
	return nl
}

func (p *lenient) value(ctx readCtx, depth int) (any, status) {
	if depth > maxDepth {
		return nil, p.fail(p.i, "JSON nested more than %d deep", maxDepth)
	}
	p.space()
	if p.i >= len(p.s) {
		p.eof = true
		return nil, incomplete
	}
	c := p.s[p.i]
	switch {
	case c == '{':
		return p.object(depth)
	case c == '[':
		return p.array(depth)
	case c == '"' || c == '\'' || strings.HasPrefix(p.s[p.i:], "“"):
		s, st := p.str()
		return s, st
	}
	return p.bare(ctx)
}

func (p *lenient) object(depth int) (any, status) {
	open := p.i
	p.i++
	o := &object{}
	sep := false // a member was read: a comma or the end comes next
	comma := false
	for {
		nl := p.space()
		if p.i >= len(p.s) {
			p.eof = true
			if len(o.keys) == 0 {
				return o, incomplete
			}
			return o, complete
		}
		switch c := p.s[p.i]; {
		case c == '}':
			if comma {
				p.flags.trailingComma = true
			}
			p.i++
			return o, complete
		case c == ',':
			if comma || !sep {
				// {, "a": 1} or {"a": 1,, "b": 2}
				p.flags.trailingComma = true
			}
			p.i++
			sep, comma = false, true
			continue
		case c == ']':
			return nil, p.fail(p.i, "a ] closes the { at byte %d", open)
		}
		if sep {
			if !nl && !p.startsKey() {
				return nil, p.fail(p.i, "unexpected %s after a member", p.show())
			}
			p.flags.missingCommas = true
		}
		keyAt := p.i
		key, st := p.key()
		switch st {
		case failed:
			return nil, st
		case incomplete:
			p.dropped = p.dropped || p.i > keyAt
			return o, p.partial(o)
		}
		p.space()
		if p.i >= len(p.s) {
			p.eof, p.dropped = true, true
			return o, p.partial(o)
		}
		if p.s[p.i] != ':' {
			return nil, p.fail(p.i, "a colon is missing after the key %q", key)
		}
		p.i++
		v, st := p.value(ctxMember, depth+1)
		switch st {
		case failed:
			return nil, st
		case incomplete:
			p.dropped = true
			return o, p.partial(o)
		}
		o.keys = append(o.keys, key)
		o.vals = append(o.vals, v)
		sep, comma = true, false
	}
}

// partial is the status of a container cut off by the end of the text:
// complete when it holds a complete member or item.
func (p *lenient) partial(o *object) status {
	if len(o.keys) == 0 {
		return incomplete
	}
	return complete
}

func (p *lenient) array(depth int) (any, status) {
	open := p.i
	p.i++
	list := []any{}
	sep, comma := false, false
	for {
		p.space()
		if p.i >= len(p.s) {
			p.eof = true
			if len(list) == 0 {
				return list, incomplete
			}
			return list, complete
		}
		switch c := p.s[p.i]; {
		case c == ']':
			if comma {
				p.flags.trailingComma = true
			}
			p.i++
			return list, complete
		case c == ',':
			if comma || !sep {
				p.flags.trailingComma = true
			}
			p.i++
			sep, comma = false, true
			continue
		case c == '}':
			return nil, p.fail(p.i, "a } closes the [ at byte %d", open)
		}
		if sep {
			p.flags.missingCommas = true
		}
		v, st := p.value(ctxItem, depth+1)
		switch st {
		case failed:
			return nil, st
		case incomplete:
			p.dropped = p.dropped || len(list) > 0
			if len(list) == 0 {
				return list, incomplete
			}
			return list, complete
		}
		list = append(list, v)
		sep, comma = true, false
	}
}

// startsKey reports whether a key starts at p.i.
func (p *lenient) startsKey() bool {
	c := p.s[p.i]
	return c == '"' || c == '\'' || strings.HasPrefix(p.s[p.i:], "“") || isBareKeyByte(c)
}

func isBareKeyByte(c byte) bool {
	return c == '_' || c == '$' || c >= 0x80 || ('a' <= c && c <= 'z') || ('A' <= c && c <= 'Z') || ('0' <= c && c <= '9')
}

// key reads an object's key: a string, or a bare name up to the colon.
func (p *lenient) key() (string, status) {
	c := p.s[p.i]
	if c == '"' || c == '\'' || strings.HasPrefix(p.s[p.i:], "“") {
		return p.str()
	}
	if !isBareKeyByte(c) {
		return "", p.fail(p.i, "unexpected %s where a key belongs", p.show())
	}
	start := p.i
	for p.i < len(p.s) {
		c := p.s[p.i]
		if isBareKeyByte(c) || c == '-' || c == ' ' || c == '.' {
			p.i++
			continue
		}
		break
	}
	if p.i >= len(p.s) {
		p.eof = true
		return "", incomplete
	}
	if p.s[p.i] != ':' {
		return "", p.fail(p.i, "unexpected %s after the key %q", p.show(), strings.TrimSpace(p.s[start:p.i]))
	}
	p.flags.bareKeys = true
	return strings.TrimSpace(p.s[start:p.i]), complete
}

// str reads a string between quotes. A closing quote followed by
// anything but a delimiter is a quote the string holds.
func (p *lenient) str() (string, status) {
	var closer string
	switch {
	case p.s[p.i] == '"':
		closer = `"`
	case p.s[p.i] == '\'':
		closer = "'"
		p.flags.singleQuotes = true
	default:
		closer = "”"
		p.flags.curlyQuotes = true
	}
	if closer == "”" {
		p.i += len("“")
	} else {
		p.i++
	}
	var b strings.Builder
	from := p.i // the start of the bytes not yet copied to b
	for p.i < len(p.s) {
		c := p.s[p.i]
		if c == '\\' && closer != "”" {
			b.WriteString(p.s[from:p.i])
			if p.i+1 >= len(p.s) {
				p.i++
				break
			}
			n := p.escape(&b)
			p.i += n
			from = p.i
			continue
		}
		if c == closer[0] && strings.HasPrefix(p.s[p.i:], closer) {
			after := p.i + len(closer)
			if p.spacedQuote(after) {
				return "", p.fail(p.i, "a quote followed by another: a comma left out, or quotes not escaped")
			}
			if p.closes(after) {
				b.WriteString(p.s[from:p.i])
				p.i = after
				return b.String(), complete
			}
			// A quote inside the text, left unescaped.
			p.flags.unescapedQuotes = true
			p.i = after
			continue
		}
		p.i++
	}
	p.eof = true
	return "", incomplete
}

// closes reports whether a quote ending at i closes its string: what
// follows it on its line is a delimiter, a comment or nothing.
func (p *lenient) closes(i int) bool {
	for i < len(p.s) && (p.s[i] == ' ' || p.s[i] == '\t' || p.s[i] == '\r') {
		i++
	}
	if i >= len(p.s) {
		return true
	}
	switch p.s[i] {
	case ',', ':', '}', ']', '\n':
		return true
	case '/':
		return i+1 < len(p.s) && (p.s[i+1] == '/' || p.s[i+1] == '*')
	}
	return false
}

// spacedQuote reports whether a double quote follows white space at i,
// on the same line: "a" "b" is two texts without a comma or one with its
// quotes unescaped, and says not which.
func (p *lenient) spacedQuote(i int) bool {
	j := i
	for j < len(p.s) && (p.s[j] == ' ' || p.s[j] == '\t') {
		j++
	}
	return j > i && j < len(p.s) && p.s[j] == '"'
}

// escape writes the escape sequence at p.i to b and returns its length.
// An escape JSON does not know (a Windows path's \d) is kept as written.
func (p *lenient) escape(b *strings.Builder) int {
	switch e := p.s[p.i+1]; e {
	case '"', '\\', '/', '\'':
		b.WriteByte(e)
	case 'b':
		b.WriteByte('\b')
	case 'f':
		b.WriteByte('\f')
	case 'n':
		b.WriteByte('\n')
	case 'r':
		b.WriteByte('\r')
	case 't':
		b.WriteByte('\t')
	case 'u':
		if r, n, ok := p.unicodeEscape(p.i); ok {
			b.WriteRune(r)
			return n
		}
		b.WriteString(`\u`)
	default:
		b.WriteByte('\\')
		return 1
	}
	return 2
}

// unicodeEscape reads \uXXXX at i, with the low half of a surrogate pair
// after it.
func (p *lenient) unicodeEscape(i int) (rune, int, bool) {
	hex := func(at int) (rune, bool) {
		if at+6 > len(p.s) || p.s[at] != '\\' || p.s[at+1] != 'u' {
			return 0, false
		}
		n, err := strconv.ParseUint(p.s[at+2:at+6], 16, 32)
		return rune(n), err == nil
	}
	r, ok := hex(i)
	if !ok {
		return 0, 0, false
	}
	if 0xD800 <= r && r < 0xDC00 {
		if lo, ok := hex(i + 6); ok && 0xDC00 <= lo && lo < 0xE000 {
			return (r-0xD800)<<10 + (lo - 0xDC00) + 0x10000, 12, true
		}
		return utf8.RuneError, 6, true
	}
	return r, 6, true
}

// bare reads a value without quotes: a number, a literal, or, as a
// member's value, a text up to the end of its line, a comma, a closing
// bracket or a quote.
func (p *lenient) bare(ctx readCtx) (any, status) {
	start := p.i
	if ctx == ctxMember {
		for p.i < len(p.s) {
			c := p.s[p.i]
			if c == ',' || c == '}' || c == ']' || c == '\n' || c == '"' {
				break
			}
			if c == '/' && p.i+1 < len(p.s) && (p.s[p.i+1] == '/' || p.s[p.i+1] == '*') && (p.i == start || p.s[p.i-1] == ' ') {
				break
			}
			p.i++
		}
	} else {
		for p.i < len(p.s) && !isWordEnd(p.s[p.i]) {
			p.i++
		}
	}
	if p.i >= len(p.s) {
		// It might have gone on.
		p.eof = true
		return nil, incomplete
	}
	word := strings.TrimSpace(p.s[start:p.i])
	if word == "" {
		return nil, p.fail(start, "unexpected %s", p.show())
	}
	if v, ok := p.literal(word); ok {
		return v, complete
	}
	if n, ok := json5Number(word); ok {
		if n != word {
			p.flags.json5Numbers = true
		}
		return json.Number(n), complete
	}
	if ctx != ctxMember {
		return nil, p.fail(start, "unexpected text %q", clip(word))
	}
	p.flags.bareValues = true
	return word, complete
}

func isWordEnd(c byte) bool {
	switch c {
	case ' ', '\t', '\n', '\r', ',', ':', '{', '}', '[', ']', '"':
		return true
	}
	return false
}

// literal reads JSON's, Python's and JavaScript's literals.
func (p *lenient) literal(w string) (any, bool) {
	switch w {
	case "true":
		return true, true
	case "false":
		return false, true
	case "null":
		return nil, true
	case "True", "False":
		p.flags.pyLiterals = true
		return w == "True", true
	case "None":
		p.flags.pyLiterals = true
		return nil, true
	case "undefined":
		p.flags.jsLiterals = true
		return nil, true
	case "NaN", "Infinity", "+Infinity", "-Infinity":
		p.flags.jsLiterals = true
		return nonFinite(w), true
	}
	return nil, false
}

// json5Number returns w as a JSON number when it is a number in JSON or
// JSON5: a sign, digits with a point and an exponent, a leading or
// trailing point, or hexadecimal digits after 0x.
func json5Number(w string) (string, bool) {
	if w == "" {
		return "", false
	}
	sign := ""
	body := w
	switch w[0] {
	case '+':
		body = w[1:]
	case '-':
		sign, body = "-", w[1:]
	}
	if len(body) > 2 && body[0] == '0' && (body[1] == 'x' || body[1] == 'X') {
		n, err := strconv.ParseUint(body[2:], 16, 64)
		if err != nil || n > 1<<53 {
			return "", false
		}
		return sign + strconv.FormatUint(n, 10), true
	}
	if body == "" || body == "." {
		return "", false
	}
	for i := 0; i < len(body); i++ {
		c := body[i]
		if !(('0' <= c && c <= '9') || c == '.' || c == 'e' || c == 'E' || ((c == '+' || c == '-') && i > 0 && (body[i-1] == 'e' || body[i-1] == 'E'))) {
			return "", false
		}
	}
	f, err := strconv.ParseFloat(body, 64)
	if err != nil || math.IsInf(f, 0) {
		return "", false
	}
	if sign == "" && json.Valid([]byte(body)) {
		if w[0] == '+' {
			return body, true
		}
		return w, true
	}
	if json.Valid([]byte(sign + body)) {
		return sign + body, true
	}
	// .5, 5., 05: written as JSON writes it.
	return sign + strconv.FormatFloat(f, 'g', -1, 64), true
}

// show names the byte at p.i for a message.
func (p *lenient) show() string {
	if p.i >= len(p.s) {
		return "end"
	}
	r, _ := utf8.DecodeRuneInString(p.s[p.i:])
	return strconv.QuoteRune(r)
}

// clip shortens a text quoted in a message.
func clip(s string) string {
	if utf8.RuneCountInString(s) > 20 {
		return string([]rune(s)[:20]) + "…"
	}
	return s
}
