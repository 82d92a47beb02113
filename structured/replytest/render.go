package replytest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"regexp"
	"strings"
)

// style is how a value is written: as JSON, or with the liberties models
// take with it.
type style struct {
	// quote is the quote of keys and texts: '"', '\'' or '“'.
	quote         rune
	bareKeys      bool
	trailingComma bool
	comments      bool
	pyLiterals    bool
	// missingCommas puts each member and item on a line of its own,
	// without the comma between them.
	missingCommas bool
	// json5 writes numbers as JSON5 does: hexadecimal integers, a
	// leading + or point.
	json5 bool
	// rawQuotes leaves the double quotes inside texts unescaped where a
	// reader can tell them from the closing one.
	rawQuotes bool
}

// render writes v in st.
func render(v *val, st style) string {
	var b strings.Builder
	st.write(&b, v)
	return b.String()
}

func (st style) write(b *strings.Builder, v *val) {
	if v.raw != nil {
		b.WriteString(st.quoted(*v.raw))
		return
	}
	switch v.kind {
	case 'o':
		b.WriteString("{")
		if st.comments {
			b.WriteString(" // the answer\n")
		}
		for i, k := range v.keys {
			st.sep(b, i)
			if st.bareKeys && identifier.MatchString(k) {
				b.WriteString(k)
			} else {
				b.WriteString(st.quoted(k))
			}
			b.WriteString(": ")
			st.write(b, v.vals[i])
		}
		st.close(b, len(v.keys), "}")
	case 'a':
		b.WriteString("[")
		for i, it := range v.items {
			st.sep(b, i)
			st.write(b, it)
		}
		st.close(b, len(v.items), "]")
	case 's':
		b.WriteString(st.quoted(v.str))
	case 'n':
		b.WriteString(st.number(v.num))
	case 'b':
		switch {
		case st.pyLiterals && v.b:
			b.WriteString("True")
		case st.pyLiterals:
			b.WriteString("False")
		case v.b:
			b.WriteString("true")
		default:
			b.WriteString("false")
		}
	case 'z':
		if st.pyLiterals {
			b.WriteString("None")
		} else {
			b.WriteString("null")
		}
	}
}

func (st style) sep(b *strings.Builder, i int) {
	switch {
	case st.missingCommas:
		b.WriteString("\n  ")
	case i > 0:
		b.WriteString(", ")
	}
}

func (st style) close(b *strings.Builder, n int, closer string) {
	if n > 0 && st.trailingComma {
		b.WriteString(",")
	}
	if st.missingCommas && n > 0 {
		b.WriteString("\n")
	}
	b.WriteString(closer)
}

var identifier = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// number writes f, in a JSON5 form when st says so.
func (st style) number(f float64) string {
	switch {
	case !st.json5:
	case f == math.Trunc(f) && f >= 10 && f < 1<<53:
		return fmt.Sprintf("0x%X", int64(f))
	case f > 0 && f < 1:
		return strings.TrimPrefix(fmtNum(f), "0")
	case f > 0:
		return "+" + fmtNum(f)
	}
	return fmtNum(f)
}

// unescapable reports whether s, between double quotes with its own
// quotes left unescaped, reads back as s: no quote of it is followed by
// what ends a text (a comma, colon, bracket, line break, the end) or by
// space and another quote, and it has no backslash.
func unescapable(s string) bool {
	if !strings.Contains(s, `"`) || strings.ContainsAny(s, "\\\n\r") {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] != '"' {
			continue
		}
		j := i + 1
		for j < len(s) && (s[j] == ' ' || s[j] == '\t') {
			j++
		}
		if j == len(s) {
			if j > i+1 {
				return false
			}
			continue // the closing quote follows at once
		}
		if strings.IndexByte(",:}]/", s[j]) >= 0 || (j > i+1 && s[j] == '"') {
			return false
		}
	}
	return true
}

func (st style) quoted(s string) string {
	if st.rawQuotes && st.quote == '"' && unescapable(s) {
		return `"` + s + `"`
	}
	switch st.quote {
	case '\'':
		return "'" + s + "'"
	case '“':
		return "“" + s + "”"
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(s)
	return strings.TrimSuffix(buf.String(), "\n")
}

// plainTexts reports whether every key and text of v can be written
// between other quotes than JSON's: no quote, backslash or line break.
func plainTexts(v *val) bool {
	ok := true
	walk(v, false, func(x *val, _ bool) {
		texts := append([]string(nil), x.keys...)
		if x.kind == 's' {
			texts = append(texts, x.str)
		}
		if x.raw != nil {
			texts = append(texts, *x.raw)
		}
		for _, s := range texts {
			if strings.ContainsAny(s, "'\"\\\n“”‘’") {
				ok = false
			}
		}
	})
	return ok
}
