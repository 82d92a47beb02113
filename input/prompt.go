package input

import (
	"fmt"
	"reflect"
)

// DefaultMaxPromptBytes is how much text a client may send, by default,
// for one model request: its query, instructions, history and every other
// text together, in bytes (MADSPARK_MAX_PROMPT_BYTES sets another).
const DefaultMaxPromptBytes = 128 << 10

// PromptError is a request whose text is more than its limit.
type PromptError struct {
	// Size is the request's text in bytes; Limit the most allowed.
	Size, Limit int
}

func (e *PromptError) Error() string {
	return fmt.Sprintf("the prompt is %d bytes (query, instructions, history and every other text together); the limit is %d bytes (MADSPARK_MAX_PROMPT_BYTES)", e.Size, e.Limit)
}

// CheckPrompt returns a *PromptError when size is more than limit; a
// limit of 0 or less means DefaultMaxPromptBytes.
func CheckPrompt(size, limit int) error {
	if limit <= 0 {
		limit = DefaultMaxPromptBytes
	}
	if size > limit {
		return &PromptError{Size: size, Limit: limit}
	}
	return nil
}

// TextBytes returns the bytes of text in v, walked as Check walks it:
// every string (map keys and struct field names are not counted, nor are
// raw bytes such as json.RawMessage, whose bounds are their own).
func TextBytes(v any) int {
	return textBytes(reflect.ValueOf(v))
}

func textBytes(v reflect.Value) int {
	switch v.Kind() {
	case reflect.Pointer, reflect.Interface:
		if v.IsNil() {
			return 0
		}
		return textBytes(v.Elem())
	case reflect.String:
		return v.Len()
	case reflect.Slice, reflect.Array:
		if v.Kind() == reflect.Slice && v.Type().Elem().Kind() == reflect.Uint8 {
			return 0
		}
		n := 0
		for i := range v.Len() {
			n += textBytes(v.Index(i))
		}
		return n
	case reflect.Map:
		n := 0
		iter := v.MapRange()
		for iter.Next() {
			n += textBytes(iter.Value())
		}
		return n
	case reflect.Struct:
		n := 0
		t := v.Type()
		for i := range t.NumField() {
			if f := t.Field(i); f.IsExported() && f.Tag.Get("json") != "-" {
				n += textBytes(v.Field(i))
			}
		}
		return n
	}
	return 0
}
