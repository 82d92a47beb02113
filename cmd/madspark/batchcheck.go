package main

import (
	"bytes"
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"
)

// checkFields refuses a CSV record with a field that is not valid UTF-8 or
// holds a NUL byte: such a value would be changed (U+FFFD) or refused by
// the store after the run, so the row is refused before it.
func checkFields(rec []string) error {
	for i, f := range rec {
		switch {
		case !utf8.ValidString(f):
			return fmt.Errorf("field %d is not valid UTF-8", i+1)
		case strings.IndexByte(f, 0) >= 0:
			return fmt.Errorf("field %d contains a NUL byte", i+1)
		}
	}
	return nil
}

// checkJSONText refuses a JSON batch item that is not valid UTF-8 (the
// decoder would turn it into U+FFFD) or holds an escaped NUL character.
func checkJSONText(raw []byte) error {
	if !utf8.Valid(raw) {
		return errors.New("not valid UTF-8")
	}
	if bytes.Contains(bytes.ToLower(raw), []byte(`\u0000`)) {
		return errors.New("a string contains a NUL character (\\u0000)")
	}
	return nil
}
