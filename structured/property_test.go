package structured_test

import (
	"testing"

	"pgregory.net/rapid"

	"github.com/madspark/madspark/structured"
	"github.com/madspark/madspark/structured/replytest"
)

type propIdea struct {
	Title       string `json:"title" jsonschema:"minLength=1"`
	Description string `json:"description" jsonschema:"minLength=1"`
}

type propIdeas struct {
	Ideas []propIdea `json:"ideas" jsonschema:"minItems=1"`
}

type propVerdict struct {
	Score      float64  `json:"score" jsonschema:"minimum=0,maximum=10"`
	Confidence float64  `json:"confidence_score" jsonschema:"minimum=0,maximum=1"`
	Decision   string   `json:"decision" jsonschema:"enum=approve,enum=revise,enum=reject"`
	Grade      string   `json:"grade" jsonschema:"enum=A,enum=B,enum=C,enum=D,enum=F"`
	Notes      []string `json:"notes"`
	Passed     bool     `json:"passed"`
	Count      int      `json:"count"`
	Comment    string   `json:"comment,omitempty"`
}

func TestReadProperty(t *testing.T) {
	ideas, err := structured.NewSpec[propIdeas]("ideas")
	if err != nil {
		t.Fatal(err)
	}
	verdict, err := structured.NewSpec[propVerdict]("verdict")
	if err != nil {
		t.Fatal(err)
	}
	stats := &replytest.Stats{}
	t.Run("ideas", func(t *testing.T) { replytest.Check(t, ideas, stats) })
	t.Run("verdict", func(t *testing.T) { replytest.Check(t, verdict, stats) })
	t.Logf("cases by format:\n%s", stats)
}

// TestReadPropertyAnySchema: the properties over schemas such as
// pipeline files declare.
func TestReadPropertyAnySchema(t *testing.T) {
	rapid.Check(t, replytest.AnySchema(func(schema []byte) (replytest.Reader, error) {
		return structured.NewSpecFromSchema("drawn", schema)
	}))
}

// FuzzReplyProperty is TestReadPropertyAnySchema under the fuzzer: go
// test -fuzz FuzzReplyProperty ./structured runs the properties for as
// long as it is given.
func FuzzReplyProperty(f *testing.F) {
	f.Fuzz(rapid.MakeFuzz(replytest.AnySchema(func(schema []byte) (replytest.Reader, error) {
		return structured.NewSpecFromSchema("drawn", schema)
	})))
}
