package openaitest

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"sync"
)

// A Flaw changes a well-formed JSON reply the way real models get replies
// wrong while keeping their content usable: an item missing, indices from
// 1, a number sent as text, a score out of range, an enum in other words,
// prose instead of JSON. Flaws work on the decoded JSON value; paths are
// slash-separated keys and list indices, with * for every item of a list
// ("evaluations/*/score").
type Flaw func(v any) any

// Imperfect returns a respond function for NewServer that answers with
// base's reply, changed by the flaws listed for the request's schema name
// (response_format.json_schema.name; "" for requests without one). A flaw
// list applies to the first reply for that schema only, unless Always is
// among them, so that a re-ask gets the well-formed reply: tests see both
// what is repaired without asking and what is asked again.
func Imperfect(base func(req *ChatRequest) Reply, flaws map[string][]Flaw) func(req *ChatRequest) Reply {
	var mu sync.Mutex
	seen := map[string]int{}
	return func(req *ChatRequest) Reply {
		reply := base(req)
		name := ""
		if req.ResponseFormat != nil && req.ResponseFormat.JSONSchema != nil {
			name = req.ResponseFormat.JSONSchema.Name
		}
		fl := flaws[name]
		if len(fl) == 0 {
			return reply
		}
		mu.Lock()
		n := seen[name]
		seen[name]++
		mu.Unlock()
		always := false
		for _, f := range fl {
			if f == nil {
				always = true
			}
		}
		if n > 0 && !always {
			return reply
		}
		reply.Content = Apply(reply.Content, fl...)
		return reply
	}
}

// Always, among the flaws of a schema, applies them to every reply, re-asks
// included.
var Always Flaw

// Apply changes the JSON text reply by flaws in order. A flaw that returns
// a string (Prose, Fence) makes the reply that text.
func Apply(reply string, flaws ...Flaw) string {
	var v any
	d := json.NewDecoder(strings.NewReader(reply))
	d.UseNumber()
	if err := d.Decode(&v); err != nil {
		return reply
	}
	for _, f := range flaws {
		if f == nil {
			continue
		}
		v = f(v)
	}
	if s, ok := v.(text); ok {
		return string(s)
	}
	b, err := json.Marshal(v)
	if err != nil {
		return reply
	}
	return string(b)
}

// text is a reply that is no longer JSON.
type text string

// Prose replaces the reply with s, plain text with no JSON in it.
func Prose(s string) Flaw { return func(any) any { return text(s) } }

// Fence wraps the reply in a markdown code fence between two sentences.
func Fence() Flaw {
	return func(v any) any {
		b, _ := json.MarshalIndent(v, "", "  ")
		return text("Here is my answer:\n```json\n" + string(b) + "\n```\nLet me know if you need more.")
	}
}

// Drop removes item i of the list at path (every list matched).
func Drop(path string, i int) Flaw {
	return func(v any) any {
		return edit(v, split(path), func(x any) any {
			list, ok := x.([]any)
			if !ok || i >= len(list) {
				return x
			}
			return append(append([]any{}, list[:i]...), list[i+1:]...)
		})
	}
}

// Keep cuts the list at path to its first n items.
func Keep(path string, n int) Flaw {
	return func(v any) any {
		return edit(v, split(path), func(x any) any {
			if list, ok := x.([]any); ok && n < len(list) {
				return list[:n]
			}
			return x
		})
	}
}

// Add adds delta to the number at path: OneBased is Add("items/*/index", 1).
func Add(path string, delta float64) Flaw {
	return func(v any) any {
		return edit(v, split(path), func(x any) any {
			if f, ok := number(x); ok {
				return json.Number(strconv.FormatFloat(f+delta, 'g', -1, 64))
			}
			return x
		})
	}
}

// Set replaces the value at path with value.
func Set(path string, value any) Flaw {
	return func(v any) any {
		return edit(v, split(path), func(any) any { return value })
	}
}

// Delete removes the field at path.
func Delete(path string) Flaw {
	return func(v any) any {
		keys := split(path)
		parent, last := keys[:len(keys)-1], keys[len(keys)-1]
		return edit(v, parent, func(x any) any {
			if m, ok := x.(map[string]any); ok {
				delete(m, last)
			}
			return x
		})
	}
}

// AsText turns the number at path into a string: 7 → "7".
func AsText(path string) Flaw {
	return func(v any) any {
		return edit(v, split(path), func(x any) any {
			if n, ok := x.(json.Number); ok {
				return n.String()
			}
			return x
		})
	}
}

// Map applies f to the value at path.
func Map(path string, f func(any) any) Flaw {
	return func(v any) any { return edit(v, split(path), f) }
}

func number(x any) (float64, bool) {
	switch n := x.(type) {
	case json.Number:
		f, err := n.Float64()
		return f, err == nil
	case float64:
		return n, true
	case int:
		return float64(n), true
	}
	return 0, false
}

func split(path string) []string {
	path = strings.Trim(path, "/")
	if path == "" {
		return nil
	}
	return strings.Split(path, "/")
}

// edit applies f to every value at keys under v and returns v.
func edit(v any, keys []string, f func(any) any) any {
	if len(keys) == 0 {
		return f(v)
	}
	k, rest := keys[0], keys[1:]
	switch x := v.(type) {
	case map[string]any:
		if c, ok := x[k]; ok {
			x[k] = edit(c, rest, f)
		}
	case []any:
		if k == "*" {
			for i := range x {
				x[i] = edit(x[i], rest, f)
			}
			return x
		}
		var i int
		if _, err := fmt.Sscan(k, &i); err == nil && i >= 0 && i < len(x) {
			x[i] = edit(x[i], rest, f)
		}
	}
	return v
}
