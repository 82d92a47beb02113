package structured_test

import (
	"context"
	"encoding/json"
	"reflect"
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
