package structured

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/madspark/madspark/llm"
)

type verdict struct {
	Score    float64  `json:"score" jsonschema:"minimum=0,maximum=10"`
	Decision string   `json:"decision" jsonschema:"enum=approve,enum=revise,enum=reject"`
	Notes    []string `json:"notes"`
	Comment  string   `json:"comment,omitempty"`
}

func (v *verdict) Validate() error {
	if v.Decision == "approve" && v.Score < 5 {
		return errors.New("an approved idea needs a score of at least 5")
	}
	return nil
}

func TestSchemaFromType(t *testing.T) {
	s, err := NewSpec[verdict]("verdict")
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Type                 string         `json:"type"`
		Required             []string       `json:"required"`
		AdditionalProperties *bool          `json:"additionalProperties"`
		Properties           map[string]any `json:"properties"`
		Ref                  string         `json:"$ref"`
	}
	if err := json.Unmarshal(s.Schema().JSON, &doc); err != nil {
		t.Fatal(err)
	}
	if doc.Type != "object" || doc.Ref != "" {
		t.Fatalf("schema is not an inline object: %s", s.Schema().JSON)
	}
	if got := strings.Join(doc.Required, ","); got != "score,decision,notes" {
		t.Errorf("required = %s, want score,decision,notes", got)
	}
	if doc.AdditionalProperties == nil || *doc.AdditionalProperties {
		t.Errorf("additionalProperties should be false")
	}
	score, _ := json.Marshal(doc.Properties["score"])
	if !strings.Contains(string(score), `"maximum":10`) {
		t.Errorf("score schema lacks maximum: %s", score)
	}
	if strings.Contains(string(s.Schema().JSON), "$schema") {
		t.Errorf("schema carries $schema, which some providers reject")
	}
}

func TestDecode(t *testing.T) {
	s, err := NewSpec[verdict]("verdict")
	if err != nil {
		t.Fatal(err)
	}
	s.WithSynonyms(map[string]string{"accept": "approve"})
	tests := []struct {
		name, in string
		// wantErr, when set, is a hard problem the error must mention.
		wantErr   string
		wantScore float64
		wantDec   string
		wantRule  string
	}{
		{name: "valid", in: `{"score": 7.5, "decision": "approve", "notes": ["ok"]}`, wantScore: 7.5, wantDec: "approve"},
		{name: "fenced", in: "```json\n{\"score\": 7.5, \"decision\": \"approve\", \"notes\": [\"ok\"]}\n```", wantScore: 7.5, wantDec: "approve", wantRule: "syntax"},
		{name: "out of range is clamped", in: `{"score": 11, "decision": "approve", "notes": []}`, wantScore: 10, wantDec: "approve", wantRule: "range"},
		{name: "synonym", in: `{"score": 6, "decision": "accept", "notes": []}`, wantScore: 6, wantDec: "approve", wantRule: "enum"},
		{name: "enum case", in: `{"score": 6, "decision": " Revise", "notes": []}`, wantScore: 6, wantDec: "revise", wantRule: "enum"},
		{name: "unknown enum", in: `{"score": 6, "decision": "maybe", "notes": []}`, wantErr: `decision: "maybe" is not one of`},
		{name: "missing list is missing", in: `{"score": 6, "decision": "approve"}`, wantErr: `notes: "notes" is missing`},
		{name: "null list is missing", in: `{"score": 6, "decision": "approve", "notes": null}`, wantErr: `notes: "notes" is missing`},
		{name: "missing score", in: `{"decision": "approve", "notes": []}`, wantErr: "score"},
		{name: "unknown field dropped", in: `{"score": 6, "decision": "approve", "notes": [], "x": 1}`, wantScore: 6, wantDec: "approve", wantRule: "extra"},
		{name: "string score", in: `{"score": "7", "decision": "approve", "notes": []}`, wantScore: 7, wantDec: "approve", wantRule: "type"},
		{name: "uncoercible", in: `{"score": "high", "decision": "approve", "notes": []}`, wantErr: `score: "high" is not a number`},
		{name: "one note for a list", in: `{"score": 6, "decision": "approve", "notes": "fine"}`, wantScore: 6, wantDec: "approve", wantRule: "type"},
		{name: "type rule", in: `{"score": 2, "decision": "approve", "notes": []}`, wantErr: "at least 5"},
		{name: "truncated", in: `{"score": 2, "decision": "appr`, wantErr: "truncated"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rd := s.read(context.Background(), tt.in, nil)
			err := rd.hardErr()
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("error = %v, want mention of %q", err, tt.wantErr)
				}
				if strings.Contains(err.Error(), "\n") {
					t.Fatalf("error is not one line: %q", err)
				}
				return
			}
			if err != nil {
				t.Fatalf("hard problem: %v", err)
			}
			fixes := rd.finish()
			if rd.val.Score != tt.wantScore || rd.val.Decision != tt.wantDec {
				t.Fatalf("value = %+v", rd.val)
			}
			if tt.wantRule == "" && len(fixes) > 0 {
				t.Fatalf("repairs %+v on a clean reply", fixes)
			}
			if tt.wantRule != "" && (len(fixes) != 1 || fixes[0].rule != tt.wantRule) {
				t.Fatalf("repairs = %+v, want one %q", fixes, tt.wantRule)
			}
		})
	}
}

func TestDecodeBareListAndIntegers(t *testing.T) {
	type item struct {
		Index int    `json:"index" jsonschema:"minimum=0"`
		Text  string `json:"text" jsonschema:"minLength=1"`
	}
	type list struct {
		Items []item `json:"items" jsonschema:"minItems=1,maxItems=2"`
	}
	s, err := NewSpec[list]("list")
	if err != nil {
		t.Fatal(err)
	}
	v, err := s.Decode(`[{"index": "1", "text": "a"}, {"index": 2.0, "text": "b"}, {"index": -1.6, "text": "c"}]`)
	if err != nil {
		t.Fatal(err)
	}
	if len(v.Items) != 2 || v.Items[0].Index != 1 || v.Items[1].Index != 2 {
		t.Fatalf("got %+v", v)
	}
	if _, err := s.Decode(`{"items": [{"index": 1}]}`); err == nil || !strings.Contains(err.Error(), "text") {
		t.Fatalf("a missing required text is hard, got %v", err)
	}
}

// scripted replies with the given texts in order and records requests.
type scripted struct {
	replies []string
	reqs    []llm.Request
}

func (s *scripted) Generate(_ context.Context, req *llm.Request) (*llm.Response, error) {
	s.reqs = append(s.reqs, *req)
	if len(s.reqs) > len(s.replies) {
		return nil, fmt.Errorf("unexpected call %d", len(s.reqs))
	}
	return &llm.Response{Text: s.replies[len(s.reqs)-1], Usage: llm.Usage{LLMCalls: 1, InputTokens: 10, OutputTokens: 5}}, nil
}

func TestGenerateRepairsOnce(t *testing.T) {
	s, _ := NewSpec[verdict]("verdict")
	c := &scripted{replies: []string{
		`{"score": 3, "decision": "approve", "notes": []}`,
		`Fixed: {"score": 8, "decision": "approve", "notes": ["good"]}`,
	}}
	req := llm.Request{Agent: "test.judge", Messages: []llm.Message{{Role: llm.RoleUser, Content: "judge it"}}}
	v, usage, err := s.Generate(context.Background(), c, req, nil)
	if err != nil {
		t.Fatal(err)
	}
	if v.Score != 8 || usage.LLMCalls != 2 || usage.InputTokens != 20 {
		t.Fatalf("got %+v usage %+v", v, usage)
	}
	if c.reqs[0].Schema == nil || c.reqs[0].Schema.Name != "verdict" {
		t.Fatalf("schema not attached: %+v", c.reqs[0].Schema)
	}
	second := c.reqs[1].Messages
	if len(second) != 3 || second[1].Role != llm.RoleAssistant || !strings.Contains(second[2].Content, "at least 5") {
		t.Fatalf("repair conversation = %+v", second)
	}
	if len(req.Messages) != 1 {
		t.Fatalf("caller's request was modified")
	}
}

func TestGenerateFailsLoudly(t *testing.T) {
	s, _ := NewSpec[verdict]("verdict")
	c := &scripted{replies: []string{`nope`, `still {"score": 3`}}
	check := func(*verdict, *Problems) {}
	_, usage, err := s.Generate(context.Background(), c, llm.Request{Agent: "test.judge"}, check)
	var re *ReplyError
	if !errors.As(err, &re) || re.Agent != "test.judge" || re.Raw != `still {"score": 3` || !errors.Is(err, ErrTruncated) {
		t.Fatalf("err = %#v", err)
	}
	if usage.LLMCalls != 2 {
		t.Fatalf("usage = %+v, want 2 calls", usage)
	}
}

// TestGenerateTruncated: a reply cut off at the token limit is sent back
// asking for a shorter one.
func TestGenerateTruncated(t *testing.T) {
	s, _ := NewSpec[verdict]("verdict")
	replies := []*llm.Response{
		{Text: `{"score": 8, "decision": "approve", "notes": ["a very long not`, FinishReason: "length"},
		{Text: `{"score": 8, "decision": "approve", "notes": ["short"]}`, FinishReason: "stop"},
	}
	var reqs []llm.Request
	c := llm.ClientFunc(func(_ context.Context, req *llm.Request) (*llm.Response, error) {
		reqs = append(reqs, *req)
		return replies[len(reqs)-1], nil
	})
	v, _, err := s.Generate(context.Background(), c, llm.Request{Agent: "test.judge"}, nil)
	if err != nil || v.Notes[0] != "short" {
		t.Fatalf("got %+v, %v", v, err)
	}
	if fix := reqs[1].Messages[len(reqs[1].Messages)-1].Content; !strings.Contains(fix, "truncated") || !strings.Contains(fix, "cut off at the length limit") {
		t.Fatalf("repair turn %q", fix)
	}
}

func TestGenerateCheck(t *testing.T) {
	s, _ := NewSpec[verdict]("verdict")
	c := &scripted{replies: []string{
		`{"score": 6, "decision": "revise", "notes": []}`,
		`{"score": 6, "decision": "revise", "notes": ["a", "b"]}`,
	}}
	check := func(v *verdict, p *Problems) {
		if len(v.Notes) != 2 {
			p.Ask("count", fmt.Sprintf("want 2 notes, got %d", len(v.Notes)), func() string { return "kept" })
		}
	}
	v, _, err := s.Generate(context.Background(), c, llm.Request{Agent: "a"}, check)
	if err != nil || len(v.Notes) != 2 {
		t.Fatalf("got %+v, %v", v, err)
	}
	if !strings.Contains(c.reqs[1].Messages[1].Content, "want 2 notes") {
		t.Fatalf("check error not fed back: %+v", c.reqs[1].Messages)
	}
}

func TestGenerateClientError(t *testing.T) {
	s, _ := NewSpec[verdict]("verdict")
	boom := &llm.Error{Provider: "openai", Status: 500, Message: "down"}
	c := llm.ClientFunc(func(context.Context, *llm.Request) (*llm.Response, error) { return nil, boom })
	_, _, err := s.Generate(context.Background(), c, llm.Request{Agent: "spark.evaluate"}, nil)
	if !errors.Is(err, boom) || !strings.HasPrefix(err.Error(), "spark.evaluate: openai: HTTP 500") {
		t.Fatalf("err = %v", err)
	}
}
