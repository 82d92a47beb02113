package structured

import (
	"encoding/json"
	"errors"
	"testing"
)

func TestKindOf(t *testing.T) {
	var v struct {
		S string          `json:"s"`
		N *int            `json:"n"`
		F float64         `json:"f"`
		B bool            `json:"b"`
		L []string        `json:"l"`
		M map[string]int  `json:"m"`
		R json.RawMessage `json:"r"`
	}
	for body, want := range map[string]string{
		`{"s":1}`: "a string", `{"n":"x"}`: "an integer", `{"f":true}`: "a number", `{"b":"yes"}`: "a boolean",
		`{"l":{}}`: "an array", `{"m":[]}`: "an object",
	} {
		err := json.Unmarshal([]byte(body), &v)
		te, ok := errors.AsType[*json.UnmarshalTypeError](err)
		if !ok {
			t.Fatalf("%s: %v", body, err)
		}
		if got := KindOf(te.Type); got != want {
			t.Errorf("%s: %q, want %q", body, got, want)
		}
	}
	if got := KindOf(nil); got != "a different type" {
		t.Errorf("nil: %q", got)
	}
}
