package debate

import (
	"fmt"
	"unicode/utf8"

	"github.com/tiktoken-go/tokenizer"
)

// NewTokenCounter returns a function counting tokens with the cl100k_base
// BPE encoding, embedded in the binary (no download). Counts of other
// models' tokenizers differ by a few percent, well inside the handoff
// budget's range. Loading takes a moment, so make one per process.
func NewTokenCounter() (func(string) int, error) {
	codec, err := tokenizer.Get(tokenizer.Cl100kBase)
	if err != nil {
		return nil, fmt.Errorf("tokenizer: %w", err)
	}
	return func(s string) int {
		n, err := codec.Count(s)
		if err != nil {
			// Invalid UTF-8: count what can be counted, roughly.
			return utf8.RuneCountInString(s) / 4
		}
		return n
	}, nil
}
