package structured

import (
	"context"
	"testing"

	"github.com/madspark/madspark/llm"
)

func TestNewSpecFromSchemaRepairs(t *testing.T) {
	schema := `{"type":"object","properties":{
		"pitch":{"type":"string"},
		"score":{"type":"number","minimum":0,"maximum":10},
		"tags":{"type":"array","items":{"type":"string"},"maxItems":2}},
		"required":["pitch","score","tags"],"additionalProperties":false}`
	s, err := NewSpecFromSchema("editor", []byte(schema))
	if err != nil {
		t.Fatal(err)
	}
	if s.Hint() == "" {
		t.Error("no hint")
	}
	var reps []llm.Repair
	ctx := llm.WithRepairSink(context.Background(), func(r llm.Repair) { reps = append(reps, r) })
	c := llm.ClientFunc(func(ctx context.Context, req *llm.Request) (*llm.Response, error) {
		return &llm.Response{Text: "Here: ```json\n{\"pitch\": \"p\", \"score\": \"12\", \"tags\": [\"a\",\"b\",\"c\"], \"extra\": 1}\n```"}, nil
	})
	got, _, err := s.Generate(ctx, c, llm.Request{Agent: "editor"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got["pitch"] != "p" || got["score"] != float64(10) || len(got["tags"].([]any)) != 2 {
		t.Errorf("got %v", got)
	}
	if _, ok := got["extra"]; ok {
		t.Errorf("extra field kept: %v", got)
	}
	if len(reps) < 2 {
		t.Errorf("repairs %v, want the score's coercion and clamp and the list trim", reps)
	}
}

func TestNewSpecFromSchemaHardProblem(t *testing.T) {
	s, err := NewSpecFromSchema("w", []byte(`{"type":"object","properties":{"pitch":{"type":"string"}},"required":["pitch"]}`))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Decode(`{"other": 1}`); err == nil {
		t.Error("a reply without the required field was accepted")
	}
	if _, err := NewSpecFromSchema("x", []byte(`{"type":"string"}`)); err == nil {
		t.Error("a non-object root was accepted")
	}
}
