package structured

import (
	"encoding/json"
	"errors"
	"strings"
)

// ErrNoJSON is returned by Extract when the text holds no JSON value.
var ErrNoJSON = errors.New("no JSON value in reply")

// ErrTruncated is returned by Extract when the text holds the start of a JSON
// value that never ends, as when a reply was cut off at the token limit.
var ErrTruncated = errors.New("reply is truncated JSON")

// Extract finds the JSON value in a model's reply. It tries, in order: the
// whole text; the contents of a markdown code fence (```json … ``` or
// ``` … ```); the first balanced JSON object or array found in prose. The
// returned bytes are always valid JSON.
func Extract(text string) ([]byte, error) {
	s := strings.TrimSpace(text)
	if s == "" {
		return nil, ErrNoJSON
	}
	if json.Valid([]byte(s)) {
		return []byte(s), nil
	}
	if body, ok := fenced(s); ok && strings.IndexAny(body, "{[") == 0 && json.Valid([]byte(body)) {
		return []byte(body), nil
	}
	truncated := false
	for i := 0; i < len(s); i++ {
		if s[i] != '{' && s[i] != '[' {
			continue
		}
		end, ok := balancedEnd(s, i)
		if !ok {
			// An unclosed value runs to the end of the text; any later
			// opening bracket is inside it, so stop here.
			truncated = true
			break
		}
		if v := s[i:end]; json.Valid([]byte(v)) {
			return []byte(v), nil
		}
	}
	if truncated {
		return nil, ErrTruncated
	}
	return nil, ErrNoJSON
}

// fenced returns the body of the first markdown code fence in s.
func fenced(s string) (string, bool) {
	start := strings.Index(s, "```")
	if start < 0 {
		return "", false
	}
	rest := s[start+3:]
	// Skip an info string such as "json" up to the end of the line.
	if nl := strings.IndexByte(rest, '\n'); nl >= 0 && !strings.ContainsAny(rest[:nl], "{[") {
		rest = rest[nl+1:]
	}
	end := strings.Index(rest, "```")
	if end < 0 {
		return strings.TrimSpace(rest), true
	}
	return strings.TrimSpace(rest[:end]), true
}

// balancedEnd returns the index just past the bracket that closes the one at
// s[start], skipping brackets inside JSON strings. ok is false when the value
// is not closed before the end of s.
func balancedEnd(s string, start int) (end int, ok bool) {
	var stack []byte
	inString, escaped := false, false
	for i := start; i < len(s); i++ {
		c := s[i]
		if inString {
			switch {
			case escaped:
				escaped = false
			case c == '\\':
				escaped = true
			case c == '"':
				inString = false
			}
			continue
		}
		switch c {
		case '"':
			inString = true
		case '{':
			stack = append(stack, '}')
		case '[':
			stack = append(stack, ']')
		case '}', ']':
			if len(stack) == 0 || stack[len(stack)-1] != c {
				// Mismatched bracket: not a JSON value starting at start.
				return i + 1, true
			}
			stack = stack[:len(stack)-1]
			if len(stack) == 0 {
				return i + 1, true
			}
		}
	}
	return 0, false
}
