package structured

import (
	"context"
	"strings"
	"sync"
	"testing"

	"github.com/madspark/madspark/llm"
)

// collect returns a context that records repairs, and the recorded list.
func collect() (context.Context, func() []llm.Repair) {
	var mu sync.Mutex
	var got []llm.Repair
	ctx := llm.WithRepairSink(context.Background(), func(r llm.Repair) {
		mu.Lock()
		defer mu.Unlock()
		got = append(got, r)
	})
	return ctx, func() []llm.Repair {
		mu.Lock()
		defer mu.Unlock()
		return append([]llm.Repair(nil), got...)
	}
}

type ideas struct {
	Ideas []string `json:"ideas" jsonschema:"minItems=1"`
}

// TestGenerateSoftFixNoReask: a reply whose problems are all repairable is
// repaired at once, without a second call, and the repair is recorded.
func TestGenerateSoftFixNoReask(t *testing.T) {
	s, _ := NewSpec[verdict]("verdict")
	c := &scripted{replies: []string{`{"score": "10.5", "decision": "Approve", "notes": []}`}}
	ctx, repairs := collect()
	v, usage, err := s.Generate(ctx, c, llm.Request{Agent: "test.judge"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if v.Score != 10 || v.Decision != "approve" || v.Notes == nil || usage.LLMCalls != 1 {
		t.Fatalf("got %+v, usage %+v", v, usage)
	}
	rules := map[string]int{}
	for _, r := range repairs() {
		if r.Agent != "test.judge" || r.Action == "" {
			t.Fatalf("repair %+v", r)
		}
		rules[r.Rule]++
	}
	if rules["type"] != 1 || rules["range"] != 1 || rules["enum"] != 1 {
		t.Fatalf("repairs = %+v", repairs())
	}
}

// TestGenerateAskThenKeep: a soft problem only the model can fix is asked
// once; when the second reply still has it, the reply is kept and the
// rule's repair recorded.
func TestGenerateAskThenKeep(t *testing.T) {
	s, _ := NewSpec[ideas]("ideas")
	c := &scripted{replies: []string{`{"ideas": ["a", "b"]}`, `{"ideas": ["a", "b", "c", "d"]}`}}
	ctx, repairs := collect()
	check := func(v *ideas, p *Problems) {
		if n := len(v.Ideas); n < 5 {
			p.Ask("count", "want 5 ideas, got "+string(rune('0'+n)), func() string { return "kept the ideas there are" })
		}
	}
	v, usage, err := s.Generate(ctx, c, llm.Request{Agent: "g"}, check)
	if err != nil {
		t.Fatal(err)
	}
	if len(v.Ideas) != 4 || usage.LLMCalls != 2 {
		t.Fatalf("got %+v, usage %+v", v, usage)
	}
	if !strings.Contains(c.reqs[1].Messages[1].Content, "want 5 ideas, got 2") {
		t.Fatalf("re-ask = %q", c.reqs[1].Messages[1].Content)
	}
	if r := repairs(); len(r) != 1 || r[0].Rule != "count" || r[0].Action != "kept the ideas there are" {
		t.Fatalf("repairs = %+v", r)
	}
}

// TestGenerateKeepsUsableFirst: when the re-asked reply is unusable, the
// first, usable one is kept.
func TestGenerateKeepsUsableFirst(t *testing.T) {
	s, _ := NewSpec[ideas]("ideas")
	c := &scripted{replies: []string{`{"ideas": ["a"]}`, `sorry, I cannot`}}
	check := func(v *ideas, p *Problems) {
		if len(v.Ideas) < 3 {
			p.Ask("count", "want 3 ideas", func() string { return "1 idea kept of 3 asked" })
		}
	}
	ctx, repairs := collect()
	v, _, err := s.Generate(ctx, c, llm.Request{Agent: "g"}, check)
	if err != nil || len(v.Ideas) != 1 || v.Ideas[0] != "a" {
		t.Fatalf("got %+v, %v", v, err)
	}
	if r := repairs(); len(r) != 1 || r[0].Action != "1 idea kept of 3 asked" {
		t.Fatalf("repairs = %+v", r)
	}
}

// TestGenerateNoJSONHint: a reply without JSON is sent back with a
// description of the JSON expected.
func TestGenerateNoJSONHint(t *testing.T) {
	s, _ := NewSpec[verdict]("verdict")
	c := &scripted{replies: []string{`I think it is good.`, `{"score": 7, "decision": "approve", "notes": []}`}}
	if _, _, err := s.Generate(context.Background(), c, llm.Request{Agent: "j"}, nil); err != nil {
		t.Fatal(err)
	}
	msg := c.reqs[1].Messages[1].Content
	if !strings.Contains(msg, `"score": number 0-10`) || !strings.Contains(msg, `"approve"|"revise"|"reject"`) {
		t.Fatalf("re-ask lacks the hint: %q", msg)
	}
	if c.reqs[0].Schema.Hint != s.Hint() || s.Hint() == "" {
		t.Fatalf("schema hint %q", c.reqs[0].Schema.Hint)
	}
}

type handoff struct {
	Summary    string  `json:"summary" jsonschema:"minLength=1"`
	Confidence float64 `json:"confidence" jsonschema:"minimum=0,maximum=1"`
}

// TestGenerateProse: an agent whose product is prose takes a plain-text
// reply as its answer, recorded, with no second call.
func TestGenerateProse(t *testing.T) {
	s, _ := NewSpec[handoff]("handoff")
	s.WithProse(func(text string) handoff { return handoff{Summary: text, Confidence: 0.5} })
	c := &scripted{replies: []string{"B-trees favour reads; LSM trees favour writes."}}
	ctx, repairs := collect()
	v, usage, err := s.Generate(ctx, c, llm.Request{Agent: "debate.drafter"}, nil)
	if err != nil || v.Summary != "B-trees favour reads; LSM trees favour writes." || usage.LLMCalls != 1 {
		t.Fatalf("got %+v, %v, %+v", v, err, usage)
	}
	if r := repairs(); len(r) != 1 || r[0].Rule != "prose" {
		t.Fatalf("repairs = %+v", r)
	}
}

// TestGenerateProseNotFormats: a reply written in YAML or label-value
// text with a field of the schema is never taken as prose, even where
// it cannot be read: its confidence is never lost. A placeholder for the
// summary is asked again; a long YAML text folded over lines is read as
// one text.
func TestGenerateProseNotFormats(t *testing.T) {
	s, _ := NewSpec[handoff]("handoff")
	s.WithProse(func(text string) handoff { return handoff{Summary: text, Confidence: 0.5} })
	long := strings.Repeat("B-trees favour reads and LSM trees favour writes. ", 4)
	for _, tc := range []struct {
		name, first string
		calls       int
	}{
		{"a YAML placeholder", "summary: N/A\nconfidence: 0.8\n", 2},
		{"a label-value placeholder", "Here it is.\n\n**Summary:** -\n**Confidence:** 0.8\n", 2},
		{"a long YAML text folded", "summary: " + strings.TrimSpace(strings.Repeat("B-trees favour reads and LSM trees favour writes.\n  ", 4)) + "\nconfidence: 0.8\n", 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := &scripted{replies: []string{tc.first, "summary: " + strings.TrimSpace(long) + "\nconfidence: 0.8\n"}}
			ctx, repairs := collect()
			v, usage, err := s.Generate(ctx, c, llm.Request{Agent: "debate.drafter"}, nil)
			if err != nil || v.Summary != strings.TrimSpace(long) || v.Confidence != 0.8 || usage.LLMCalls != tc.calls {
				t.Fatalf("got %+v, %v, %d calls, want %d", v, err, usage.LLMCalls, tc.calls)
			}
			for _, r := range repairs() {
				if r.Rule == "prose" {
					t.Fatalf("taken as prose: %+v", r)
				}
			}
		})
	}
}

// TestGenerateDefersCache: the request asks the cache to wait, and the
// reply is accepted only once it was usable.
func TestGenerateDefersCache(t *testing.T) {
	s, _ := NewSpec[verdict]("verdict")
	replies := []string{`nothing`, `{"score": 7, "decision": "approve", "notes": []}`}
	var accepted []int
	calls := 0
	c := llm.ClientFunc(func(_ context.Context, req *llm.Request) (*llm.Response, error) {
		if !req.Deferred {
			t.Errorf("request not deferred")
		}
		n := calls
		calls++
		return &llm.Response{Text: replies[n], OnAccept: func() { accepted = append(accepted, n) }}, nil
	})
	if _, _, err := s.Generate(context.Background(), c, llm.Request{Agent: "j"}, nil); err != nil {
		t.Fatal(err)
	}
	if len(accepted) != 1 || accepted[0] != 1 {
		t.Fatalf("accepted replies %v, want only the second", accepted)
	}
}

func TestDescribe(t *testing.T) {
	s, _ := NewSpec[verdict]("verdict")
	want := `{"score": number 0-10, "decision": "approve"|"revise"|"reject", "notes": [string], "comment" (optional): string}`
	if got := s.Hint(); got != want {
		t.Fatalf("hint = %s\nwant   %s", got, want)
	}
}

// TestTextInJSON: a plain-text agent whose reply is JSON holding the text
// gets the text, recorded; prose with braces in it stays prose.
func TestTextInJSON(t *testing.T) {
	for _, tt := range []struct{ in, want string }{
		{`{"answer": "Use a B-tree."}`, "Use a B-tree."},
		{"```json\n{\"analysis\": \"Markets grow.\"}\n```", "Markets grow."},
		{`"Just this."`, "Just this."},
		{`Use {braces} for sets.`, `Use {braces} for sets.`},
		{`{"a": "x", "b": "y"}`, `{"a": "x", "b": "y"}`},
	} {
		c := &scripted{replies: []string{tt.in}}
		ctx, repairs := collect()
		got, _, err := Text(ctx, c, llm.Request{Agent: "t"}, nil)
		if err != nil || got != tt.want {
			t.Fatalf("Text(%q) = %q, %v; want %q", tt.in, got, err, tt.want)
		}
		if changed := got != tt.in; changed != (len(repairs()) == 1) {
			t.Fatalf("Text(%q): repairs %+v", tt.in, repairs())
		}
	}
}
