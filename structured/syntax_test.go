package structured

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"
	"unicode/utf8"
)

// TestFindCandidates: the JSON values of a reply are its outermost ones,
// repaired, never an inner fragment.
func TestFindCandidates(t *testing.T) {
	tests := []struct {
		name, in string
		// want are the candidates' values as JSON, in order; "!" marks
		// one that could not be read.
		want []string
		// rule, when set, is a word of a syntax repair of the first.
		rule string
	}{
		{"plain object", `{"a":1}`, []string{`{"a":1}`}, ""},
		{"plain array with space", "  [1,2]\n", []string{`[1,2]`}, ""},
		{"json fence", "Here you go:\n```json\n{\"a\": [1, 2]}\n```\nEnjoy.", []string{`{"a":[1,2]}`}, "code fence"},
		{"prose around object", `Sure! The answer is {"score": 7, "note": "a } in a string"} as requested.`, []string{`{"note":"a } in a string","score":7}`}, "set aside"},
		{"brackets in prose", `Use [brackets] like {"ok": true}`, []string{"!", `{"ok":true}`}, ""},
		{"unclosed bracket in prose", `See [below: {"ok": true}`, []string{"!", `{"ok":true}`}, ""},
		{"unescaped quotes", `{"notes": ["he said "hi" today", "solar "quoted"", ""quoted" farm"]}`,
			[]string{`{"notes":["he said \"hi\" today","solar \"quoted\"","\"quoted\" farm"]}`}, "unescaped quotes"},
		{"quote, space, quote", `{"notes": ["a" "b"]}`, []string{"!"}, ""},
		{"missing commas", "{\"a\": 1\n\"b\": [\"x\"\n\"y\"]\n}", []string{`{"a":1,"b":["x","y"]}`}, "missing commas"},
		{"unquoted texts", `{"verdict": approve, "note": it's fine}`, []string{`{"note":"it's fine","verdict":"approve"}`}, "unquoted texts"},
		{"JSON5 numbers", `{"a": .85, "b": +7.5, "c": 0x1F, "d": 5., "e": -.5}`, []string{`{"a":0.85,"b":7.5,"c":31,"d":5,"e":-0.5}`}, "JSON5 numbers"},
		{"unicode escapes", `{"a": "caf\u00e9 \ud83d\ude00"}`, []string{`{"a":"café 😀"}`}, ""},
		{"escaped quote", `x {"s": "say \"hi\" }"} y`, []string{`{"s":"say \"hi\" }"}`}, ""},
		{"trailing commas", `{"ideas": [{"t": 1,}, {"t": 2},],}`, []string{`{"ideas":[{"t":1},{"t":2}]}`}, "trailing comma"},
		{"comment", "{\"a\": 1, // one\n \"b\": 2}", []string{`{"a":1,"b":2}`}, "comments"},
		{"python literals", `{"a": True, "b": None, "c": False}`, []string{`{"a":true,"b":null,"c":false}`}, "Python literals"},
		{"single quotes", `{'a': 'x'}`, []string{`{"a":"x"}`}, "single quotes"},
		{"curly quotes", `{“a”: “x”}`, []string{`{"a":"x"}`}, "curly quotes"},
		{"bare keys", `{a: 1, b_c: "x"}`, []string{`{"a":1,"b_c":"x"}`}, "unquoted keys"},
		{"tags", `<json>{"a": 1}</json>`, []string{`{"a":1}`}, "set aside"},
		{"cut after a complete value", `{"ideas": [{"t": "a"}, {"t": "b"}]`, []string{`{"ideas":[{"t":"a"},{"t":"b"}]}`}, "closing brackets"},
		{"cut inside a value", `{"ideas": [{"t": "a"}, {"t": "b`, []string{`{"ideas":[{"t":"a"}]}`}, "incomplete"},
		{"cut at once", `{"score": 7`, []string{"!"}, ""},
		{"backslashes kept", `{"p": "C:\\dir\\file.txt", "q": "say \"x\" \n"`, []string{`{"p":"C:\\dir\\file.txt","q":"say \"x\" \n"}`}, "closing brackets"},
		{"stringified", `{\"a\": 1}`, []string{`{"a":1}`}, ""},
		{"two values", `Example: {"t": "x"} Answer: {"ideas": []}`, []string{`{"t":"x"}`, `{"ideas":[]}`}, "set aside"},
		{"scalar", ` "just text" `, []string{`"just text"`}, ""},
		{"none", "I cannot help with that.", nil, ""},
		{"empty", "   ", nil, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cands := findCandidates(context.Background(), tt.in)
			if len(cands) != len(tt.want) {
				t.Fatalf("%d candidates, want %d: %+v", len(cands), len(tt.want), cands)
			}
			for i, c := range cands {
				if tt.want[i] == "!" {
					if c.err == nil {
						t.Fatalf("candidate %d read as %v, want an error", i, c.v)
					}
					continue
				}
				if c.err != nil {
					t.Fatalf("candidate %d: %v", i, c.err)
				}
				got, _ := json.Marshal(plain(c.v))
				if string(got) != tt.want[i] {
					t.Fatalf("candidate %d = %s, want %s", i, got, tt.want[i])
				}
			}
			if tt.rule != "" {
				var actions []string
				for _, f := range cands[0].fixes {
					actions = append(actions, f.action)
				}
				if !strings.Contains(strings.Join(actions, "; "), tt.rule) {
					t.Fatalf("repairs %q do not say %q", actions, tt.rule)
				}
			}
		})
	}
}

// TestParseTruncated: a reply with nothing complete is truncated, and
// one without JSON says so.
func TestParseTruncated(t *testing.T) {
	s, _ := NewSpec[verdict]("verdict")
	if _, err := s.Decode(`{"score": 2, "decision": "appr`); !errors.Is(err, ErrTruncated) {
		t.Fatalf("err = %v, want ErrTruncated", err)
	}
	if _, err := s.Decode(`I like it.`); !errors.Is(err, ErrNoJSON) {
		t.Fatalf("err = %v, want ErrNoJSON", err)
	}
}

// FuzzRead checks that reading any text against a schema never panics,
// and that a usable reading is a value of the schema, as the validator
// of its hard rules says, and one line of problem otherwise.
func FuzzRead(f *testing.F) {
	for _, s := range []string{`{"score": 7, "decision": "approve", "notes": []}`, "```json\n[1]\n```", `x {"a":"}"} y`,
		`{"a":[`, `[}`, `"\"`, `{'score': '8/10', decision: "**Approve**", notes: "- a\n- b",}`, `[{"Score": True}]`} {
		f.Add(s)
	}
	s, err := NewSpec[verdict]("verdict")
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, text string) {
		p := s.Parse(context.Background(), text)
		if !p.Usable {
			if strings.Contains(p.Problem, "\n") || p.Problem == "" {
				t.Fatalf("problem %q is not one line", p.Problem)
			}
			return
		}
		if !utf8.Valid(p.Value) {
			t.Fatalf("value %q is not UTF-8", p.Value)
		}
		var v verdict
		if err := json.Unmarshal(p.Value, &v); err != nil {
			t.Fatalf("value %s: %v", p.Value, err)
		}
		if v.Score < 0 || v.Score > 10 || (v.Decision != "approve" && v.Decision != "revise" && v.Decision != "reject") {
			t.Fatalf("value %+v is not of the schema", v)
		}
	})
}

// TestParseStopsWhenCancelled: a reading whose context is done gives no
// value, and says why.
func TestParseStopsWhenCancelled(t *testing.T) {
	s, _ := NewSpec[verdict]("verdict")
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	p := s.Parse(ctx, `{"score": 7, "decision": "approve", "notes": []}`)
	if p.Usable || !strings.Contains(p.Problem, context.Canceled.Error()) {
		t.Fatalf("read as %s (usable %v), problem %q", p.Value, p.Usable, p.Problem)
	}
	if cands := findCandidates(ctx, strings.Repeat(`{"a": 1} `, 100)); len(cands) != 0 {
		t.Fatalf("%d candidates found after the context was done", len(cands))
	}
}

// FuzzReadBudget checks that reading takes time in proportion to a
// reply's length, whatever it holds: each input, repeated to 64 KB (so
// that what is slow when repeated shows), is read within a budget of a
// second plus 20 µs a byte, some fifty times what a linear reading takes
// on a loaded machine.
//
//	go test -run '^$' -fuzz FuzzReadBudget -fuzztime 60s ./structured
func FuzzReadBudget(f *testing.F) {
	for _, tc := range adversarial {
		f.Add(tc.make(64))
	}
	for _, s := range []string{`{"title":[`, "```\n", `[see `, `"a" [`, `{"a": "x "y" z", `, "<think>", `{\"a\": [`} {
		f.Add(s)
	}
	s, err := NewSpec[verdict]("verdict")
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, text string) {
		if text == "" {
			return
		}
		long := strings.Repeat(text, (64<<10)/len(text)+1)
		start := time.Now()
		s.Parse(context.Background(), long)
		if d, budget := time.Since(start), time.Second+time.Duration(len(long))*20*time.Microsecond; d > budget {
			t.Fatalf("reading %d bytes took %v, over its budget of %v; the text repeated: %q", len(long), d, budget, text)
		}
	})
}
