package openaitest

import "testing"

func TestApply(t *testing.T) {
	in := `{"evaluations":[{"index":0,"score":7},{"index":1,"score":8},{"index":2,"score":9}],"verdict":"approve"}`
	for _, tc := range []struct {
		name  string
		flaws []Flaw
		want  string
	}{
		{"one-based", []Flaw{Add("evaluations/*/index", 1)}, `{"evaluations":[{"index":1,"score":7},{"index":2,"score":8},{"index":3,"score":9}],"verdict":"approve"}`},
		{"drop and text", []Flaw{Drop("evaluations", 1), AsText("evaluations/0/score")}, `{"evaluations":[{"index":0,"score":"7"},{"index":2,"score":9}],"verdict":"approve"}`},
		{"set, keep, delete", []Flaw{Set("verdict", "accept"), Keep("evaluations", 1), Delete("evaluations/0/score")}, `{"evaluations":[{"index":0}],"verdict":"accept"}`},
		{"prose", []Flaw{Prose("I like it.")}, `I like it.`},
	} {
		if got := Apply(in, tc.flaws...); got != tc.want {
			t.Errorf("%s: got %s\nwant %s", tc.name, got, tc.want)
		}
	}
}

func TestImperfectFirstReplyOnly(t *testing.T) {
	base := func(*ChatRequest) Reply { return Reply{Content: `{"n":1}`} }
	req := &ChatRequest{ResponseFormat: &ResponseFormat{JSONSchema: &JSONSchema{Name: "s"}}}
	once := Imperfect(base, map[string][]Flaw{"s": {Set("n", 2)}})
	if a, b := once(req).Content, once(req).Content; a != `{"n":2}` || b != `{"n":1}` {
		t.Fatalf("once: %s then %s", a, b)
	}
	always := Imperfect(base, map[string][]Flaw{"s": {Set("n", 2), Always}})
	if a, b := always(req).Content, always(req).Content; a != `{"n":2}` || b != `{"n":2}` {
		t.Fatalf("always: %s then %s", a, b)
	}
}
