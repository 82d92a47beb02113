package tokens

import (
	"strings"
	"testing"
	"unicode/utf8"
)

func TestCountAndCut(t *testing.T) {
	c, err := New()
	if err != nil {
		t.Fatal(err)
	}
	text := "Rust is a systems programming language that runs fast, prevents segfaults and guarantees thread safety."
	n := c.Count(text)
	if n < 15 || n > 25 {
		t.Fatalf("count %d", n)
	}
	for k := 0; k <= n+1; k++ {
		cut, more := c.Cut(text, k)
		if more != (k < n) || !strings.HasPrefix(text, cut) || (k < n && c.Count(cut) > k) || (k >= n && cut != text) {
			t.Errorf("cut %d: %q, %v", k, cut, more)
		}
	}
	// A cut inside a character keeps whole characters.
	emoji := strings.Repeat("🎉", 10)
	for k := 0; k < c.Count(emoji); k++ {
		cut, _ := c.Cut(emoji, k)
		if !utf8.ValidString(cut) || !strings.HasPrefix(emoji, cut) {
			t.Errorf("cut %d of emoji: %q", k, cut)
		}
	}
}
