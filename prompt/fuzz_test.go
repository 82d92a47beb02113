package prompt

import (
	"strings"
	"testing"
	"testing/fstest"
)

// FuzzExpand checks that expanding {{include:}} in any text, against a
// small tree of prompts (one of them including itself), never panics,
// always ends, and leaves no include it resolved behind.
func FuzzExpand(f *testing.F) {
	for _, s := range []string{"plain", "{{include:shared/a.md}}", "{{ include: shared/loop.md }}", "{{include:../x}}", "{{include:}}", "{{include:shared/a.md}}{{include:shared/a.md}}", "{{{{include:shared/a.md}}}}"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, text string) {
		fsys := fstest.MapFS{
			"shared/a.md":    {Data: []byte("A {{include:shared/b.md}}")},
			"shared/b.md":    {Data: []byte("B")},
			"shared/loop.md": {Data: []byte("{{include:shared/loop.md}}")},
			"root.md":        {Data: []byte(text)},
		}
		l, err := New(fsys, "")
		if err != nil {
			t.Fatal(err)
		}
		got, err := l.Load("root.md")
		if err == nil && strings.Contains(got, "{{include:shared/a.md}}") {
			t.Fatalf("Load(%q) = %q: an include is left", text, got)
		}
	})
}
