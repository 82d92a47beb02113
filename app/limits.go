package app

import (
	"strconv"
	"strings"

	"github.com/madspark/madspark/input"
)

// promptLimit reads MADSPARK_MAX_PROMPT_BYTES: the most text, in bytes,
// that one request may send to a model (its query, instructions and
// history together) on every path; 0 when unset, for
// input.DefaultMaxPromptBytes.
func promptLimit(getenv func(string) string) (int, error) {
	s := strings.TrimSpace(getenv("MADSPARK_MAX_PROMPT_BYTES"))
	if s == "" {
		return 0, nil
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < 1 {
		return 0, Inputf("MADSPARK_MAX_PROMPT_BYTES must be a positive number of bytes (default %d), got %q", input.DefaultMaxPromptBytes, s)
	}
	return n, nil
}
