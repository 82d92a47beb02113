package proposal

import (
	"strings"
	"testing"
)

// FuzzParseProfile checks that reading any profile, as YAML or JSON,
// never panics, and that a profile it accepts is one Validate accepts
// too, with one-line errors otherwise.
func FuzzParseProfile(f *testing.F) {
	for _, s := range []string{
		goodYAML,
		`{"name":"Ada","field":"physics"}`,
		"name: [\n",
		"{}",
		"name: \"a\\u0000b\"\n",
	} {
		f.Add("profile.yaml", s)
		f.Add("profile.json", s)
	}
	f.Fuzz(func(t *testing.T, name, text string) {
		p, err := ParseProfile(name, strings.NewReader(text))
		if err != nil {
			if strings.Contains(err.Error(), "\n") {
				t.Fatalf("a multi-line error: %q", err)
			}
			return
		}
		if err := p.Validate(); err != nil {
			t.Fatalf("ParseProfile accepted %q but Validate refuses it: %v", text, err)
		}
	})
}
