// Package input checks what madspark is given from outside (command-line
// flags and arguments, files, HTTP requests, records read back from a
// store) the same way on every path, before any of it reaches a model or a
// store:
//
//   - text is valid UTF-8 and holds no control character but tab and line
//     breaks (a line feed, or a carriage return right before one); a
//     one-line field holds no line break either;
//   - a number is finite, and a whole number read as one fits in an int64;
//   - a problem is one line that names the field ("topic contains the
//     control character U+001B").
//
// Show turns text from outside into something safe to print on one line of
// a terminal or in a message.
package input

import (
	"encoding/json"
	"fmt"
	"math"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"unicode/utf8"
)

// Error is a value that input refuses: the field it is in, in dotted form
// ("temperatures.generate", "seed_ideas[2]"), and what is wrong with it.
type Error struct {
	// Field names the value; empty when it has no name.
	Field string
	// Problem says what is wrong, as the rest of a sentence that starts
	// with the field ("is not valid UTF-8").
	Problem string
}

func (e *Error) Error() string {
	if e.Field == "" {
		return "value " + e.Problem
	}
	return e.Field + " " + e.Problem
}

func fail(field, format string, a ...any) *Error {
	return &Error{Field: field, Problem: fmt.Sprintf(format, a...)}
}

// Text checks s, a text field that may span lines: it must be valid
// UTF-8 without control characters other than tab, line feed, and
// carriage return before a line feed. field names s in the error.
func Text(field, s string) error { return text(field, s, false) }

// Line checks s as Text does, for a field of one line: no line feed or
// carriage return either.
func Line(field, s string) error { return text(field, s, true) }

func text(field, s string, oneLine bool) error {
	if !utf8.ValidString(s) {
		return fail(field, "is not valid UTF-8")
	}
	for i, r := range s {
		switch {
		case r == '\t':
		case r == '\n' || (r == '\r' && strings.HasPrefix(s[i+1:], "\n")):
			if oneLine {
				return fail(field, "must be one line (it contains a line break)")
			}
		case r == 0:
			return fail(field, "contains a NUL byte")
		case IsControl(r):
			return fail(field, "contains the control character %U", r)
		}
	}
	return nil
}

// IsControl reports whether r is a control character: C0 (U+0000 to
// U+001F, tab and line breaks included), DEL (U+007F) or C1 (U+0080 to
// U+009F), which terminals may act on rather than show.
func IsControl(r rune) bool {
	return r < 0x20 || (r >= 0x7f && r <= 0x9f)
}

// Float checks f, a number field: it must be finite.
func Float(field string, f float64) error {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return fail(field, "must be a finite number, got %v", f)
	}
	return nil
}

// ParseFloat reads s, a number typed by a person ("0.7", "1e3"), as a
// finite float64: "NaN", "Inf" and numbers beyond float64's range are
// refused with an error naming field.
func ParseFloat(field, s string) (float64, error) {
	f, err := strconv.ParseFloat(strings.TrimSpace(s), 64)
	if err != nil && !isRange(err) {
		return 0, fail(field, "must be a number, got %s", Show(s))
	}
	if err != nil || math.IsNaN(f) || math.IsInf(f, 0) {
		return 0, fail(field, "must be a finite number, got %s", Show(s))
	}
	return f, nil
}

// ParseInt reads s, a whole number typed by a person, as an int64: a
// number beyond int64's range is refused, never rounded into a float.
func ParseInt(field, s string) (int64, error) {
	n, err := strconv.ParseInt(strings.TrimSpace(s), 10, 64)
	if isRange(err) {
		return 0, fail(field, "is beyond the range of a whole number (%d to %d), got %s", int64(math.MinInt64), int64(math.MaxInt64), Show(s))
	}
	if err != nil {
		return 0, fail(field, "must be a whole number, got %s", Show(s))
	}
	return n, nil
}

func isRange(err error) bool {
	ne, ok := err.(*strconv.NumError)
	return ok && ne.Err == strconv.ErrRange
}

// Number checks n, a number as JSON wrote it: it must be a finite
// float64. Whether a whole number fits is for the type it is decoded into
// (an int field refuses 1e30, a uint64 takes 2^63); ParseInt reads one
// into an int64.
func Number(field string, n json.Number) error {
	_, err := ParseFloat(field, n.String())
	return err
}

// Check reports the first value in v that input refuses: a string that is
// not Text (or not Line, for a struct field tagged `input:"line"`), a
// float that is not finite, a json.Number that is not a Number. v is a
// struct, map, slice or pointer to one, or a value decoded from JSON
// (map[string]any, []any); fields are named by their JSON names, and
// struct fields tagged `json:"-"` are skipped, as are raw bytes
// (json.RawMessage).
func Check(v any) error {
	rv := reflect.ValueOf(v)
	if valid(rv, false) {
		return nil
	}
	// Only a value refused is walked again, to name what is refused.
	return check(rv, "", false)
}

// fieldInfo is what check needs of a struct's field.
type fieldInfo struct {
	index   int
	name    string // its JSON name, "" for an embedded struct's fields
	oneLine bool
}

// structFields caches the fields check walks, by struct type.
var structFields sync.Map // reflect.Type → []fieldInfo

// fieldsOf returns the fields check walks of struct type t: the exported
// ones not tagged `json:"-"`.
func fieldsOf(t reflect.Type) []fieldInfo {
	if fs, ok := structFields.Load(t); ok {
		return fs.([]fieldInfo)
	}
	var fs []fieldInfo
	for i := range t.NumField() {
		f := t.Field(i)
		if !f.IsExported() {
			continue
		}
		tag, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if tag == "-" {
			continue
		}
		field := tag
		if field == "" {
			field = f.Name
		}
		if f.Anonymous && tag == "" {
			field = ""
		}
		fs = append(fs, fieldInfo{index: i, name: field, oneLine: f.Tag.Get("input") == "line"})
	}
	structFields.Store(t, fs)
	return fs
}

// valid reports whether check finds nothing to refuse in v, without
// building the names of the values it walks.
func valid(v reflect.Value, oneLine bool) bool {
	if v.Type() == numberType {
		return Number("", json.Number(v.String())) == nil
	}
	switch v.Kind() {
	case reflect.Pointer, reflect.Interface:
		return v.IsNil() || valid(v.Elem(), oneLine)
	case reflect.Float32, reflect.Float64:
		return Float("", v.Float()) == nil
	case reflect.String:
		return text("", v.String(), oneLine) == nil
	case reflect.Slice, reflect.Array:
		if v.Kind() == reflect.Slice && v.Type().Elem().Kind() == reflect.Uint8 {
			return true
		}
		for i := range v.Len() {
			if !valid(v.Index(i), oneLine) {
				return false
			}
		}
	case reflect.Map:
		iter := v.MapRange()
		for iter.Next() {
			if iter.Key().Kind() == reflect.String && text("", fmt.Sprint(iter.Key().Interface()), true) != nil {
				return false
			}
			if !valid(iter.Value(), oneLine) {
				return false
			}
		}
	case reflect.Struct:
		for _, f := range fieldsOf(v.Type()) {
			if !valid(v.Field(f.index), f.oneLine) {
				return false
			}
		}
	}
	return true
}

var numberType = reflect.TypeFor[json.Number]()

func check(v reflect.Value, path string, oneLine bool) error {
	if v.Type() == numberType {
		return Number(name(path), json.Number(v.String()))
	}
	switch v.Kind() {
	case reflect.Pointer, reflect.Interface:
		if v.IsNil() {
			return nil
		}
		return check(v.Elem(), path, oneLine)
	case reflect.Float32, reflect.Float64:
		return Float(name(path), v.Float())
	case reflect.String:
		return text(name(path), v.String(), oneLine)
	case reflect.Slice, reflect.Array:
		if v.Kind() == reflect.Slice && v.Type().Elem().Kind() == reflect.Uint8 {
			return nil // raw bytes, such as json.RawMessage
		}
		for i := range v.Len() {
			if err := check(v.Index(i), fmt.Sprintf("%s[%d]", path, i), oneLine); err != nil {
				return err
			}
		}
	case reflect.Map:
		iter := v.MapRange()
		for iter.Next() {
			k := fmt.Sprint(iter.Key().Interface())
			if iter.Key().Kind() == reflect.String {
				if err := text(join(path, Show(k)), k, true); err != nil {
					return err
				}
			}
			if err := check(iter.Value(), join(path, k), oneLine); err != nil {
				return err
			}
		}
	case reflect.Struct:
		for _, f := range fieldsOf(v.Type()) {
			if err := check(v.Field(f.index), join(path, f.name), f.oneLine); err != nil {
				return err
			}
		}
	}
	return nil
}

func join(path, field string) string {
	switch {
	case field == "":
		return path
	case path == "":
		return field
	}
	return path + "." + field
}

func name(path string) string {
	if path == "" {
		return "value"
	}
	return path
}

// Show returns s as it may be printed on one line of a terminal or in a
// message: unchanged when it is valid UTF-8 without control characters,
// line breaks or bidirectional overrides, else with each of those written
// as a Go escape ("\n", "\x1b", "\u202e") and each invalid byte as \xHH.
// A terminal shows what Show returns; it acts on none of it.
func Show(s string) string {
	if !needsEscape(s, true) {
		return s
	}
	return escape(s, true)
}

// ShowText is Show for text printed as lines: tab and line feeds are kept.
func ShowText(s string) string {
	if !needsEscape(s, false) {
		return s
	}
	return escape(s, false)
}

func needsEscape(s string, oneLine bool) bool {
	for i, r := range s {
		if r == utf8.RuneError || hidden(s, i, r, oneLine) {
			return true
		}
	}
	return false
}

// hidden reports whether a terminal would act on r, at s[i], rather than
// show it: control characters (but tab and line breaks in text of several
// lines), and the bidirectional formatting characters that reorder what
// follows.
func hidden(s string, i int, r rune, oneLine bool) bool {
	switch {
	case r == '\t' || r == '\n':
		return oneLine
	case r == '\r' && !oneLine && strings.HasPrefix(s[i+1:], "\n"):
		return false
	case IsControl(r):
		return true
	case r >= 0x202a && r <= 0x202e, r >= 0x2066 && r <= 0x2069:
		return true
	}
	return false
}

func escape(s string, oneLine bool) string {
	var b strings.Builder
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			fmt.Fprintf(&b, `\x%02x`, s[i])
		case !hidden(s, i, r, oneLine):
			b.WriteString(s[i : i+size])
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\t':
			b.WriteString(`\t`)
		case r == '\r':
			b.WriteString(`\r`)
		case r < 0x80:
			fmt.Fprintf(&b, `\x%02x`, r)
		default:
			fmt.Fprintf(&b, `\u%04x`, r)
		}
		i += size
	}
	return b.String()
}
