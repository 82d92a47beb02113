package openai

import (
	"encoding/json"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/tidwall/gjson"
)

// decodeChunk decodes the data of a stream event into ch, as
// json.Unmarshal does. A chunk of the common shape (text deltas, a finish
// reason, usage, with the types expected) is read in place, which costs a
// fraction of what encoding/json does (a model streams a chunk per
// token); any other (tool calls, an error, a value of another type, a key
// in another case, invalid JSON) is decoded by encoding/json, so that it
// is read, or refused, exactly as before.
func decodeChunk(data []byte, ch *streamChunk) error {
	if readChunk(data, ch) {
		return nil
	}
	*ch = streamChunk{}
	return json.Unmarshal(data, ch)
}

// readChunk reads data into ch if it is a chunk of the common shape, and
// reports whether it was.
func readChunk(data []byte, ch *streamChunk) bool {
	if !gjson.ValidBytes(data) {
		return false
	}
	root := gjson.ParseBytes(data)
	if !root.IsObject() {
		return false
	}
	ok := true
	root.ForEach(func(k, v gjson.Result) bool {
		switch k.String() {
		case "model":
			ok = str(v, &ch.Model)
		case "choices":
			ok = readChoices(v, ch)
		case "usage":
			ok = readUsage(v, ch)
		default:
			// An error, or a key encoding/json would match to a field
			// whatever its case.
			ok = !foldsTo(k.String(), "model", "choices", "usage", "error")
		}
		return ok
	})
	return ok
}

func readChoices(v gjson.Result, ch *streamChunk) bool {
	if v.Type == gjson.Null {
		ch.Choices = nil
		return true
	}
	if !v.IsArray() {
		return false
	}
	ch.Choices = ch.Choices[:0]
	ok := true
	v.ForEach(func(_, c gjson.Result) bool {
		if !c.IsObject() {
			ok = false
			return false
		}
		// As encoding/json does, an element within the slice's capacity
		// (a key given twice) is decoded onto what it held.
		if n := len(ch.Choices); n < cap(ch.Choices) {
			ch.Choices = ch.Choices[:n+1]
		} else {
			ch.Choices = append(ch.Choices, streamChoice{})
		}
		choice := &ch.Choices[len(ch.Choices)-1]
		c.ForEach(func(k, f gjson.Result) bool {
			switch k.String() {
			case "index":
				ok = integer(f, &choice.Index)
			case "finish_reason":
				ok = str(f, &choice.FinishReason)
			case "delta":
				if f.Type == gjson.Null {
					return true
				}
				if !f.IsObject() {
					ok = false
					return false
				}
				f.ForEach(func(k, d gjson.Result) bool {
					switch k.String() {
					case "content":
						ok = str(d, &choice.Delta.Content)
					case "refusal":
						ok = str(d, &choice.Delta.Refusal)
					default:
						// Tool calls are read by encoding/json.
						ok = !foldsTo(k.String(), "content", "refusal", "tool_calls")
					}
					return ok
				})
			default:
				ok = !foldsTo(k.String(), "index", "finish_reason", "delta")
			}
			return ok
		})
		return ok
	})
	return ok
}

func readUsage(v gjson.Result, ch *streamChunk) bool {
	if v.Type == gjson.Null {
		ch.Usage = nil
		return true
	}
	if !v.IsObject() {
		return false
	}
	if ch.Usage == nil {
		ch.Usage = &struct {
			PromptTokens     int `json:"prompt_tokens"`
			CompletionTokens int `json:"completion_tokens"`
		}{}
	}
	ok := true
	v.ForEach(func(k, f gjson.Result) bool {
		switch k.String() {
		case "prompt_tokens":
			ok = integer(f, &ch.Usage.PromptTokens)
		case "completion_tokens":
			ok = integer(f, &ch.Usage.CompletionTokens)
		default:
			ok = !foldsTo(k.String(), "prompt_tokens", "completion_tokens")
		}
		return ok
	})
	return ok
}

// str reads a JSON string into s (null leaves s as it is, as
// encoding/json does); false for any other type.
func str(v gjson.Result, s *string) bool {
	switch v.Type {
	case gjson.Null:
		return true
	case gjson.String:
		if strings.IndexByte(v.Raw, '\\') >= 0 {
			// Escapes are read by encoding/json, which writes an invalid
			// one as U+FFFD.
			return json.Unmarshal([]byte(v.Raw), s) == nil
		}
		if !utf8.ValidString(v.Str) {
			return false
		}
		*s = v.Str
		return true
	}
	return false
}

// integer reads a JSON number written as a whole number that fits an int
// into n (null leaves n as it is); false for anything else.
func integer(v gjson.Result, n *int) bool {
	switch v.Type {
	case gjson.Null:
		return true
	case gjson.Number:
		i, err := strconv.Atoi(v.Raw)
		if err != nil {
			return false
		}
		*n = i
		return true
	}
	return false
}

// foldsTo reports whether key equals one of names, whatever its case.
func foldsTo(key string, names ...string) bool {
	for _, n := range names {
		if strings.EqualFold(key, n) {
			return true
		}
	}
	return false
}
