package input_test

import (
	"encoding/json"
	"errors"
	"math"
	"strings"
	"testing"

	"github.com/madspark/madspark/input"
)

type inner struct {
	Temp float64 `json:"temp"`
}

type params struct {
	Topic  string            `json:"topic"`
	Name   string            `json:"name,omitempty" input:"line"`
	Seeds  []string          `json:"seed_ideas"`
	Inner  inner             `json:"temperatures"`
	Ptr    *float64          `json:"ptr,omitempty"`
	Tags   map[string]string `json:"tags"`
	Skip   string            `json:"-"`
	Raw    json.RawMessage   `json:"raw,omitempty"`
	hidden float64
}

func TestCheck(t *testing.T) {
	nan, inf := math.NaN(), math.Inf(-1)
	for _, tt := range []struct {
		v    any
		want string
	}{
		{&params{Topic: "ok\ttab\nand lines\r\n", Seeds: []string{"a"}, Inner: inner{Temp: 1}, hidden: nan, Skip: "\x1b", Raw: json.RawMessage("\x00")}, ""},
		{&params{Topic: "a\x00b"}, "topic contains a NUL byte"},
		{&params{Topic: "\xff"}, "topic is not valid UTF-8"},
		{&params{Topic: "title\x1b]0;pwned\x07"}, "topic contains the control character U+001B"},
		{&params{Topic: "over\rwrite"}, "topic contains the control character U+000D"},
		{&params{Topic: "c1 \u009b2J"}, "topic contains the control character U+009B"},
		{&params{Topic: "del\x7f"}, "topic contains the control character U+007F"},
		{&params{Name: "two\nlines"}, "name must be one line (it contains a line break)"},
		{&params{Seeds: []string{"a", "b\xc3"}}, "seed_ideas[1] is not valid UTF-8"},
		{&params{Inner: inner{Temp: nan}}, "temperatures.temp must be a finite number, got NaN"},
		{&params{Ptr: &inf}, "ptr must be a finite number, got -Inf"},
		{&params{Tags: map[string]string{"k": "\x00"}}, "tags.k contains a NUL byte"},
		{&params{Tags: map[string]string{"a\x1bb": "v"}}, `tags.a\x1bb contains the control character U+001B`},
		{map[string]any{"n": json.Number("18446744073709551615")}, ""},
		{map[string]any{"n": json.Number("1" + strings.Repeat("0", 400))}, "n must be a finite number, got 1" + strings.Repeat("0", 400)},
		{map[string]any{"x": json.Number("1e400")}, "x must be a finite number, got 1e400"},
		{map[string]any{"x": json.Number("0.5"), "list": []any{"a", json.Number("-3")}}, ""},
		{"plain\x1b", "value contains the control character U+001B"},
	} {
		err := input.Check(tt.v)
		if (tt.want == "") != (err == nil) || (err != nil && err.Error() != tt.want) {
			t.Errorf("%+v: %v, want %q", tt.v, err, tt.want)
		}
		if err != nil {
			if strings.Contains(err.Error(), "\n") {
				t.Errorf("not one line: %q", err)
			}
			var ie *input.Error
			if !errors.As(err, &ie) {
				t.Errorf("%v is not an *input.Error", err)
			}
		}
	}
}

func TestParseNumbers(t *testing.T) {
	for _, tt := range []struct {
		s, want string
	}{
		{"NaN", "n must be a finite number, got NaN"},
		{"-Inf", "n must be a finite number, got -Inf"},
		{"1e400", "n must be a finite number, got 1e400"},
		{"seven", "n must be a number, got seven"},
		{"0.25", ""},
	} {
		_, err := input.ParseFloat("n", tt.s)
		if (tt.want == "") != (err == nil) || (err != nil && err.Error() != tt.want) {
			t.Errorf("ParseFloat(%q): %v, want %q", tt.s, err, tt.want)
		}
	}
	if n, err := input.ParseInt("n", " 42 "); err != nil || n != 42 {
		t.Errorf("ParseInt(42) = %d, %v", n, err)
	}
	if _, err := input.ParseInt("n", "9223372036854775808"); err == nil || !strings.Contains(err.Error(), "beyond the range of a whole number") {
		t.Errorf("ParseInt beyond int64: %v", err)
	}
	if _, err := input.ParseInt("n", "1.5"); err == nil || err.Error() != "n must be a whole number, got 1.5" {
		t.Errorf("ParseInt(1.5): %v", err)
	}
	if _, err := input.ParseInt("n", "a\nb"); err == nil || strings.Contains(err.Error(), "\n") {
		t.Errorf("ParseInt of two lines: %q", err)
	}
}

func TestShow(t *testing.T) {
	for _, tt := range []struct{ in, line, text string }{
		{"plain café", "plain café", "plain café"},
		{"a\nb\tc", `a\nb\tc`, "a\nb\tc"},
		{"win\r\nline", `win\r\nline`, "win\r\nline"},
		{"\x1b[2J\x1b]0;title\x07", `\x1b[2J\x1b]0;title\x07`, `\x1b[2J\x1b]0;title\x07`},
		{"csi \u009b31m", `csi \u009b31m`, `csi \u009b31m`},
		{"bidi \u202eevil", `bidi \u202eevil`, `bidi \u202eevil`},
		{"bad \xff byte", `bad \xff byte`, `bad \xff byte`},
		{"lone\rcr", `lone\rcr`, `lone\rcr`},
	} {
		if got := input.Show(tt.in); got != tt.line {
			t.Errorf("Show(%q) = %q, want %q", tt.in, got, tt.line)
		}
		if got := input.ShowText(tt.in); got != tt.text {
			t.Errorf("ShowText(%q) = %q, want %q", tt.in, got, tt.text)
		}
	}
}
