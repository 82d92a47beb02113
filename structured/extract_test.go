package structured

import (
	"encoding/json"
	"errors"
	"testing"
)

func TestExtract(t *testing.T) {
	tests := []struct {
		name, in, want string
		err            error
	}{
		{"plain object", `{"a":1}`, `{"a":1}`, nil},
		{"plain array with space", "  [1,2]\n", `[1,2]`, nil},
		{"json fence", "Here you go:\n```json\n{\"a\": [1, 2]}\n```\nEnjoy.", `{"a": [1, 2]}`, nil},
		{"bare fence", "```\n[{\"x\":\"y\"}]\n```", `[{"x":"y"}]`, nil},
		{"prose around object", `Sure! The answer is {"score": 7, "note": "a } in a string"} as requested.`, `{"score": 7, "note": "a } in a string"}`, nil},
		{"skips invalid bracket", `Use [brackets] like {"ok": true}`, `{"ok": true}`, nil},
		{"escaped quote", `x {"s": "say \"hi\" }"} y`, `{"s": "say \"hi\" }"}`, nil},
		{"truncated", `{"ideas": [{"title": "a"}, {"title": "b`, "", ErrTruncated},
		{"truncated in prose", "Result:\n```json\n{\"a\": [1, 2", "", ErrTruncated},
		{"none", "I cannot help with that.", "", ErrNoJSON},
		{"empty", "   ", "", ErrNoJSON},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Extract(tt.in)
			if tt.err != nil {
				if !errors.Is(err, tt.err) {
					t.Fatalf("Extract(%q) error = %v, want %v", tt.in, err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatalf("Extract(%q): %v", tt.in, err)
			}
			if string(got) != tt.want {
				t.Fatalf("Extract(%q) = %s, want %s", tt.in, got, tt.want)
			}
		})
	}
}

// FuzzExtract checks that Extract never panics, only ever returns valid JSON,
// and finds a valid JSON object embedded in arbitrary prose without brackets.
func FuzzExtract(f *testing.F) {
	for _, s := range []string{`{"a":1}`, "```json\n[1]\n```", `x {"a":"}"} y`, `{"a":[`, `[}`, `"\"`} {
		f.Add(s, "prefix ")
	}
	f.Fuzz(func(t *testing.T, text, prose string) {
		if got, err := Extract(text); err == nil && !json.Valid(got) {
			t.Fatalf("Extract(%q) returned invalid JSON %q", text, got)
		}
		obj, _ := json.Marshal(map[string]string{"v": text})
		clean := make([]rune, 0, len(prose))
		for _, r := range prose {
			if r != '{' && r != '[' && r != '`' {
				clean = append(clean, r)
			}
		}
		in := string(clean) + string(obj) + string(clean)
		got, err := Extract(in)
		if err != nil {
			t.Fatalf("Extract(%q): %v", in, err)
		}
		var want, m map[string]string
		_ = json.Unmarshal(obj, &want) // invalid UTF-8 in text became U+FFFD
		if err := json.Unmarshal(got, &m); err != nil || m["v"] != want["v"] {
			t.Fatalf("Extract(%q) = %q, want the embedded object", in, got)
		}
	})
}
