// Package tokens counts and cuts text in tokens of the cl100k_base BPE
// encoding, embedded in the binary (no download). Other models'
// tokenizers count a few percent apart: enough for budgets and limits
// stated in tokens.
package tokens

import (
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/tiktoken-go/tokenizer"
)

// Counter counts and cuts text. Loading one takes a moment: make one per
// process. It is safe for concurrent use.
type Counter struct {
	codec tokenizer.Codec
}

// New loads the encoding.
func New() (*Counter, error) {
	codec, err := tokenizer.Get(tokenizer.Cl100kBase)
	if err != nil {
		return nil, fmt.Errorf("tokenizer: %w", err)
	}
	return &Counter{codec: codec}, nil
}

// Count returns the number of tokens of s.
func (c *Counter) Count(s string) int {
	n, err := c.codec.Count(s)
	if err != nil {
		// Invalid UTF-8: count what can be counted, roughly.
		return utf8.RuneCountInString(s) / 4
	}
	return n
}

// Cut returns the first n tokens of s, and whether s had more. A cut
// within a character keeps the characters before it whole.
func (c *Counter) Cut(s string, n int) (string, bool) {
	ids, _, err := c.codec.Encode(s)
	if err != nil || len(ids) <= n {
		return s, false
	}
	out, err := c.codec.Decode(ids[:max(n, 0)])
	if err != nil {
		return s, false
	}
	// A token may end inside a character: drop the part.
	return strings.ToValidUTF8(trimPartial(out), ""), true
}

// trimPartial drops an incomplete character at the end of s.
func trimPartial(s string) string {
	for i := len(s) - 1; i >= 0 && i >= len(s)-utf8.UTFMax; i-- {
		if utf8.RuneStart(s[i]) {
			if !utf8.ValidString(s[i:]) {
				return s[:i]
			}
			break
		}
	}
	return s
}
