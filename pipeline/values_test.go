package pipeline_test

import (
	"math"
	"strings"
	"testing"

	"github.com/madspark/madspark/pipeline"
)

type inner struct {
	Temp float64 `json:"temp"`
}

type params struct {
	Topic  string            `json:"topic"`
	Seeds  []string          `json:"seed_ideas"`
	Inner  inner             `json:"temperatures"`
	Ptr    *float64          `json:"ptr,omitempty"`
	Tags   map[string]string `json:"tags"`
	hidden float64
}

func TestCheckValues(t *testing.T) {
	nan, inf := math.NaN(), math.Inf(-1)
	for _, tt := range []struct {
		p    params
		want string
	}{
		{params{Topic: "ok", Seeds: []string{"a"}, Inner: inner{Temp: 1}, hidden: nan}, ""},
		{params{Topic: "a\x00b"}, "topic contains a NUL byte"},
		{params{Topic: "\xff"}, "topic is not valid UTF-8"},
		{params{Seeds: []string{"a", "b\xc3"}}, "seed_ideas[1] is not valid UTF-8"},
		{params{Inner: inner{Temp: nan}}, "temperatures.temp must be a finite number, got NaN"},
		{params{Ptr: &inf}, "ptr must be a finite number, got -Inf"},
		{params{Tags: map[string]string{"k": "\x00"}}, "tags.k contains a NUL byte"},
	} {
		err := pipeline.CheckValues(&tt.p)
		if (tt.want == "") != (err == nil) || (err != nil && err.Error() != tt.want) {
			t.Errorf("%+v: %v, want %q", tt.p, err, tt.want)
		}
		if err != nil && strings.Contains(err.Error(), "\n") {
			t.Errorf("not one line: %v", err)
		}
	}
}
