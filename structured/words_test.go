package structured_test

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/madspark/madspark/structured"
)

// TestWordsPeopleRead: replies whose content a person reads at once are
// read so, or refused; never read as another value.
func TestWordsPeopleRead(t *testing.T) {
	const (
		grade   = `{"type":"object","properties":{"grade":{"type":"string","enum":["A","B","C","D","F"]}},"required":["grade"],"additionalProperties":false}`
		score   = `{"type":"object","properties":{"score":{"type":"number","minimum":0,"maximum":10}},"required":["score"],"additionalProperties":false}`
		verdict = `{"type":"object","properties":{"verdict":{"type":"string","enum":["approve","revise"]},"score":{"type":"number","minimum":0,"maximum":10}},"required":["verdict","score"],"additionalProperties":false}`
		ready   = `{"type":"object","properties":{"ready":{"type":"boolean"}},"required":["ready"],"additionalProperties":false}`
	)
	for _, tc := range []struct {
		name, schema, reply, want string
		// refusable: a refusal (the reply asked for again) is right too;
		// another value never is.
		refusable bool
	}{
		{name: "one-letter enum value with a qualifier", schema: grade, reply: `{"grade": "B (with minor reservations)"}`, want: `{"grade":"B"}`},
		{name: "one-letter enum value with a reason", schema: grade, reply: `{"grade": "A (clearer first step)"}`, want: `{"grade":"A"}`},
		{name: "one-letter enum value after a label and colon", schema: grade, reply: `{"grade": "Grade: D"}`, want: `{"grade":"D"}`},
		{name: "a half in words", schema: score, reply: `{"score": "seven and a half"}`, want: `{"score":7.5}`},
		{name: "a half after digits", schema: score, reply: `{"score": "7 and a half"}`, want: `{"score":7.5}`},
		{name: "decimals in words", schema: score, reply: `{"score": "eight point five"}`, want: `{"score":8.5}`},
		{name: "a vulgar fraction", schema: score, reply: `{"score": "7½"}`, want: `{"score":7.5}`},
		{name: "a draft inside a think block", schema: verdict,
			reply: "<think>I could write {\"verdict\": \"revise\", \"score\": 2} but the idea is better than that.</think>\n{\"verdict\": \"approve\", \"score\": 7}",
			want:  `{"verdict":"approve","score":7}`},
		{name: "decimals in words out of ten", schema: score, reply: `{"score": "seven point five out of ten"}`, want: `{"score":7.5}`},
		{name: "a decimal comma", schema: score, reply: `{"score": "7,5"}`, want: `{"score":7.5}`},
		{name: "a number and another", schema: score, reply: `{"score": "seven or eight"}`, refusable: true, want: `{}`},
		{name: "a range", schema: score, reply: `{"score": "5-7"}`, refusable: true, want: `{}`},
		{name: "yes and why", schema: ready, reply: `{"ready": "Yes, it is ready"}`, want: `{"ready":true}`},
		{name: "yes and no", schema: ready, reply: `{"ready": "yes and no"}`, refusable: true, want: `{}`},
		{name: "an example before the answer", schema: verdict,
			reply: "For example {\"verdict\": \"revise\", \"score\": 2}. My answer: {\"verdict\": \"approve\", \"score\": 7}",
			want:  `{"verdict":"approve","score":7}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			spec, err := structured.NewSpecFromSchema("gap", []byte(tc.schema))
			if err != nil {
				t.Fatal(err)
			}
			got := spec.Parse(context.Background(), tc.reply)
			if !got.Usable && tc.refusable {
				return
			}
			var g, w any
			_ = json.Unmarshal(got.Value, &g)
			_ = json.Unmarshal([]byte(tc.want), &w)
			if !got.Usable || !reflect.DeepEqual(g, w) {
				t.Fatalf("read as %s (usable %v: %s), want %s\nreply: %s\nrepairs: %+v", got.Value, got.Usable, got.Problem, tc.want, tc.reply, got.Repairs)
			}
		})
	}
}

// TestLastWordWins: among complete values, the one the reply gives as
// its final or corrected answer is taken, else the last one not given as
// an example, whatever repairs each needs; which one, and why, is
// recorded.
func TestLastWordWins(t *testing.T) {
	schema := `{"type":"object","properties":{"title":{"type":"string"},"score":{"type":"number"}},"required":["title","score"],"additionalProperties":false}`
	spec, err := structured.NewSpecFromSchema("last", []byte(schema))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ name, reply, want, why string }{
		{"a draft, then the revision needing a repair", `Draft: {"title": "draft", "score": 5}. Let me revise it: {"title": "final", "score": 7,}`, "final", "last"},
		{"the final answer first, then a note", `Final answer: {"title": "final", "score": 7,} (an earlier try was {"title": "draft", "score": 5})`, "final", "final or corrected"},
		{"an example after the answer", `{"title": "final", "score": 7} For example, {"title": "example", "score": 1}`, "final", "not given as an example"},
		{"the corrected one between", `{"title": "draft", "score": 5} Corrected: {'title': 'final', 'score': 7} Note {"title": "aside", "score": 2}`, "final", "final or corrected"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := spec.Parse(context.Background(), tc.reply)
			var v struct{ Title string }
			_ = json.Unmarshal(got.Value, &v)
			if !got.Usable || v.Title != tc.want {
				t.Fatalf("read as %s (%s), want title %q", got.Value, got.Problem, tc.want)
			}
			found := false
			for _, r := range got.Repairs {
				found = found || r.Rule == "candidate" && strings.Contains(r.Action, tc.why)
			}
			if !found {
				t.Fatalf("no candidate repair saying %q: %+v", tc.why, got.Repairs)
			}
		})
	}
	// A revision that cannot be read, its fields under other names, or
	// presented as the corrected answer whatever it holds: asked again,
	// never read around.
	for _, reply := range []string{
		`A first draft: {"title": "draft", "score": 5} Final answer: {the_title: "N/A", the_score: 7,}`,
		`{"title": "draft", "score": 5} Revised: {"Title": "", "Score": 7}`,
		`{"title": "draft", "score": 5} The corrected answer: {}`,
		"{\"title\": \"draft\", \"score\": 5}\n\nThe corrected answer:\n```json\n{\"title\": \"final\" \"score\": }\n```",
	} {
		if got := spec.Parse(context.Background(), reply); got.Usable {
			t.Errorf("%s read as %s", reply, got.Value)
		}
	}
}

// TestNumbersWithUnits: a text holding exactly one number, with a unit,
// an ordinal or in a JSON5 form, is that number, in a list as alone; a
// text with two numbers or a multiplier is not read, and a list with such
// an item is asked again, never read without it.
func TestNumbersWithUnits(t *testing.T) {
	schema := `{"type":"object","properties":{"ranks":{"type":"array","items":{"type":"number"}}},"required":["ranks"]}`
	spec, err := structured.NewSpecFromSchema("units", []byte(schema))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ reply, want string }{
		{`{"ranks": ["#2", "3rd", "7 points", "$1,200", ".85", "+7.5", "0x1F"]}`, `{"ranks":[2,3,7,1200,0.85,7.5,31]}`},
		{`{"ranks": [1, .5, +2, 0x10]}`, `{"ranks":[1,0.5,2,16]}`},
		{`{"ranks": [1, "2-3", 4]}`, ""},
		{`{"ranks": [1, "1.2k"]}`, ""},
		{`{"ranks": [1, "3 million"]}`, ""},
		{`{"ranks": [1, Infinity]}`, ""},
		{`{"ranks": [1, NaN]}`, ""},
	} {
		got := spec.Parse(context.Background(), tc.reply)
		if tc.want == "" {
			if got.Usable {
				t.Errorf("%s read as %s, want it asked again", tc.reply, got.Value)
			}
			continue
		}
		if !got.Usable || string(got.Value) != tc.want {
			t.Errorf("%s read as %s (%s), want %s", tc.reply, got.Value, got.Problem, tc.want)
		}
	}
}

// TestPlaceholdersAreAbsent: "", "N/A", "TBD" and the like are no value,
// for a text as for a number: a required one is asked again.
func TestPlaceholdersAreAbsent(t *testing.T) {
	schema := `{"type":"object","properties":{"title":{"type":"string"},"level":{"type":"string","enum":["none","low","high"]}},"required":["title","level"]}`
	spec, err := structured.NewSpecFromSchema("ph", []byte(schema))
	if err != nil {
		t.Fatal(err)
	}
	for _, ph := range []string{"", "N/A", "n/a", "none", "TBD", "-", "null", "unknown", "**N/A**"} {
		reply := fmt.Sprintf(`{"title": %q, "level": "low"}`, ph)
		if got := spec.Parse(context.Background(), reply); got.Usable {
			t.Errorf("%s read as %s", reply, got.Value)
		}
	}
	// An enum's own value is no placeholder.
	if got := spec.Parse(context.Background(), `{"title": "x", "level": "none"}`); !got.Usable || string(got.Value) != `{"level":"none","title":"x"}` {
		t.Errorf("read as %s (%s)", got.Value, got.Problem)
	}
}

// TestKeysByMeaning: a required field given under another name is taken
// from it when only one member can be it; never read as null.
func TestKeysByMeaning(t *testing.T) {
	schema := `{"type":"object","properties":{
		"critique":{"type":"string","description":"the reviewer's feedback on the idea"},
		"score":{"type":"number"},
		"owner":{"type":["string","null"]}},
		"required":["critique","score","owner"],"additionalProperties":false}`
	spec, err := structured.NewSpecFromSchema("keys", []byte(schema))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ reply, want string }{
		// The description names it.
		{`{"feedback": "good", "score": 7, "owner": null}`, `{"critique":"good","owner":null,"score":7}`},
		// The only member left, of the only type it can be.
		{`{"critique": "good", "score": 7, "person": "Ana"}`, `{"critique":"good","owner":"Ana","score":7}`},
		// Two members left for one field: asked, never null.
		{`{"critique": "good", "score": 7, "person": "Ana", "lead": "Bo"}`, ""},
		// Not given at all: null, as the schema allows.
		{`{"critique": "good", "score": 7}`, `{"critique":"good","owner":null,"score":7}`},
	} {
		got := spec.Parse(context.Background(), tc.reply)
		if tc.want == "" {
			if got.Usable {
				t.Errorf("%s read as %s, want it asked again", tc.reply, got.Value)
			}
			continue
		}
		if !got.Usable || string(got.Value) != tc.want {
			t.Errorf("%s read as %s (%s), want %s", tc.reply, got.Value, got.Problem, tc.want)
		}
	}
}

// TestDeepWrappers: an object inside wrappers, each holding it alone or
// with status fields beside it, is taken out, recorded.
func TestDeepWrappers(t *testing.T) {
	schema := `{"type":"object","properties":{"title":{"type":"string"},"score":{"type":"number"}},"required":["title","score"]}`
	spec, err := structured.NewSpecFromSchema("wrap", []byte(schema))
	if err != nil {
		t.Fatal(err)
	}
	reply := `{"status": "ok", "code": 200, "data": {"result": {"success": true, "answer": {"title": "x", "score": 7}}}}`
	got := spec.Parse(context.Background(), reply)
	if !got.Usable || string(got.Value) != `{"score":7,"title":"x"}` {
		t.Fatalf("read as %s (%s)", got.Value, got.Problem)
	}
	shapes := 0
	for _, r := range got.Repairs {
		if r.Rule == "shape" {
			shapes++
		}
	}
	if shapes != 3 {
		t.Fatalf("%d shape repairs, want 3: %+v", shapes, got.Repairs)
	}
}

// TestStatusWrapperKeys: the keys of a wrapper with status fields are
// never taken for the fields they might fill by elimination: {"status":
// "ok", "data": {…}} is the value inside, not "status" for the one text
// field left and "data" for the one object.
func TestStatusWrapperKeys(t *testing.T) {
	schema := `{"type":"object","properties":{"title":{"type":"string"},"pitch":{"type":"object","properties":{"title":{"type":"string"}}}},"required":["title"]}`
	spec, err := structured.NewSpecFromSchema("wrap", []byte(schema))
	if err != nil {
		t.Fatal(err)
	}
	got := spec.Parse(context.Background(), `{"status": "ok", "data": {"title": "solar"}}`)
	if !got.Usable || string(got.Value) != `{"title":"solar"}` {
		t.Fatalf("read as %s (%s), %+v", got.Value, got.Problem, got.Repairs)
	}
}

// TestWrapperOrField: a member that may be a wrapper or a field under
// another name is never read into a field it does not state: an item
// sent alone is not the object holding its list, a field under another
// name is not a wrapper around a list written as text, and a one-key
// object around nothing of the schema's is a wrapper, not a field.
func TestWrapperOrField(t *testing.T) {
	for _, tc := range []struct{ schema, reply, want string }{
		{`{"type":"object","properties":{"evaluations":{"type":"array","minItems":1,"items":{"type":"object","properties":{"index":{"type":"integer"},"critique":{"type":"string"},"suggestions":{"type":"array","items":{"type":"string"}}},"required":["index","critique","suggestions"]}}},"required":["evaluations"]}`,
			`{"critique": "solar", "suggestions": []}`, ""},
		{`{"type":"object","properties":{"ranking":{"type":"array","items":{"type":"string"}},"reasons":{"type":"string"}},"required":["ranking"]}`,
			`{"the_reasons": "[1]"}`, ""},
		{`{"type":"object","properties":{"title":{"type":"array","items":{"type":"string"}}}}`,
			`[{"model_remark": "written quickly"}]`, `{}`},
		{`{"type":"object","properties":{"title":{"type":"object","properties":{"title":{"type":"string"}}}}}`,
			`{"result": {}}`, `{}`},
		// A wrapper around an object of the schema's, or the one list
		// under another name holding that object: the reply does not say.
		{`{"type":"object","properties":{"score":{"type":"array","items":{"type":"object","properties":{"score":{"type":"array","items":{"type":"string"}}}}}},"required":["score"]}`,
			`{"answer_field": [{"score": []}]}`, ""},
		// The field under another name, its value spoiled: asked again,
		// never read as the object around it.
		{`{"type":"object","properties":{"title":{"type":"object","properties":{"title":{"type":"string"},"priority":{"type":"number"}},"required":["title","priority"]},"priority":{"type":"string"}}}`,
			`{"the_title": {"priority": 0}}`, ""},
		// The one list under another name where no wrapper reading gives
		// a whole value: taken.
		{`{"type":"object","properties":{"ideas":{"type":"array","items":{"type":"object","properties":{"title":{"type":"string"}},"required":["title"]}}},"required":["ideas"]}`,
			`{"answer_field": [{"title": "solar"}, {"title": "wind"}]}`, `{"ideas":[{"title":"solar"},{"title":"wind"}]}`},
	} {
		spec, err := structured.NewSpecFromSchema("wrap", []byte(tc.schema))
		if err != nil {
			t.Fatal(err)
		}
		got := spec.Parse(context.Background(), tc.reply)
		switch {
		case tc.want == "" && got.Usable && len(got.Asks) == 0:
			t.Errorf("%s read as %s, %+v", tc.reply, got.Value, got.Repairs)
		case tc.want != "" && (!got.Usable || string(got.Value) != tc.want):
			t.Errorf("%s read as %s (%s), want %s", tc.reply, got.Value, got.Problem, tc.want)
		}
	}
}
