package app

import (
	"errors"
	"strings"
	"testing"
	"time"
)

// TestConcurrency reads MADSPARK_PROVIDER_CONCURRENCY as one number or as
// per-provider numbers, a flag winning over it; anything else is an
// InputError.
func TestConcurrency(t *testing.T) {
	env := func(v string) func(string) string {
		return func(k string) string {
			if k == "MADSPARK_PROVIDER_CONCURRENCY" {
				return v
			}
			return ""
		}
	}
	for _, c := range []struct {
		spec, provider string
		flag, want     int
	}{
		{"", "openai", 0, DefaultConcurrency},
		{"8", "openai", 0, 8},
		{"8", "openai", 3, 3},
		{"openai=8,gemini=2,*=5", "gemini", 0, 2},
		{"openai=8,gemini=2,*=5", "ollama", 0, 5},
		{"openai=8", "ollama", 0, DefaultConcurrency},
	} {
		if got, err := Concurrency(env(c.spec), c.provider, c.flag, "--max-concurrent"); err != nil || got != c.want {
			t.Errorf("%q for %s with flag %d: %d, %v; want %d", c.spec, c.provider, c.flag, got, err, c.want)
		}
	}
	for _, spec := range []string{"0", "-1", "openai=0", "openai", "openai=x", "eight"} {
		if _, err := Concurrency(env(spec), "openai", 0, ""); !errors.As(err, new(InputError)) {
			t.Errorf("%q: %v, want an InputError", spec, err)
		}
	}
	if _, err := Concurrency(env(""), "openai", -2, "--max-concurrent"); err == nil || err.Error() != "--max-concurrent must be positive, got -2" {
		t.Errorf("negative flag: %v", err)
	}
}

// TestShellQuote quotes only what a shell would split or expand.
func TestShellQuote(t *testing.T) {
	for in, want := range map[string]string{
		"outputs/run_1": "outputs/run_1", "my dir": "'my dir'", "it's": `'it'\''s'`, "": "''", "$HOME": "'$HOME'",
	} {
		if got := ShellQuote(in); got != want {
			t.Errorf("ShellQuote(%q) = %s, want %s", in, got, want)
		}
	}
}

// TestBreakerCooldown reads MADSPARK_BREAKER_COOLDOWN as a duration from
// 1s to 1h; unset is the breaker's default (0 here); anything else is an
// InputError naming the variable.
func TestBreakerCooldown(t *testing.T) {
	for _, c := range []struct {
		v    string
		want time.Duration
		bad  bool
	}{
		{"", 0, false}, {"8s", 8 * time.Second, false}, {" 1h ", time.Hour, false}, {"1s", time.Second, false},
		{"500ms", 0, true}, {"2h", 0, true}, {"-5s", 0, true}, {"60", 0, true}, {"soon", 0, true},
	} {
		got, err := breakerCooldown(func(k string) string {
			if k == "MADSPARK_BREAKER_COOLDOWN" {
				return c.v
			}
			return ""
		})
		var ie InputError
		switch {
		case c.bad && (!errors.As(err, &ie) || !strings.Contains(err.Error(), "MADSPARK_BREAKER_COOLDOWN")):
			t.Errorf("%q: %v, want an InputError naming the variable", c.v, err)
		case !c.bad && (err != nil || got != c.want):
			t.Errorf("%q: %v, %v; want %v", c.v, got, err, c.want)
		}
	}
}
