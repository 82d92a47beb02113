package debate

import "github.com/madspark/madspark/tokens"

// NewTokenCounter returns a function counting tokens with the cl100k_base
// BPE encoding (package tokens). Counts of other models' tokenizers differ
// by a few percent, well inside the handoff budget's range. Loading takes
// a moment, so make one per process.
func NewTokenCounter() (func(string) int, error) {
	c, err := tokens.New()
	if err != nil {
		return nil, err
	}
	return c.Count, nil
}
