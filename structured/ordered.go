package structured

import (
	"encoding/json"
	"errors"
	"io"
	"strings"
	"unicode/utf8"
)

// object is a decoded JSON object that keeps its members in the order the
// reply wrote them, duplicates included, so that reading it is
// deterministic and says which of two spellings of a key came first.
type object struct {
	keys []string
	vals []any
}

// lookup returns the value of the last member called key.
func (o *object) lookup(key string) (any, bool) {
	for i := len(o.keys) - 1; i >= 0; i-- {
		if o.keys[i] == key {
			return o.vals[i], true
		}
	}
	return nil, false
}

// get returns the value of the last member called key, or nil.
func (o *object) get(key string) any {
	v, _ := o.lookup(key)
	return v
}

// decodeOrdered decodes one JSON value: objects as *object, arrays as
// []any, numbers as json.Number. Text after the value is an error.
func decodeOrdered(data []byte) (any, error) {
	if !json.Valid(data) {
		return nil, errors.New("invalid JSON")
	}
	d := &decoder{data: data}
	v, err := d.value(0)
	if err != nil {
		return nil, err
	}
	if d.skip(); d.i != len(d.data) {
		return nil, errors.New("text after the JSON value")
	}
	return v, nil
}

// decoder reads JSON that json.Valid accepted, keeping objects' order.
type decoder struct {
	data []byte
	i    int
}

func (d *decoder) skip() {
	for d.i < len(d.data) {
		switch d.data[d.i] {
		case ' ', '\t', '\n', '\r':
			d.i++
		default:
			return
		}
	}
}

func (d *decoder) value(depth int) (any, error) {
	if depth > 512 {
		return nil, errors.New("JSON nested too deeply")
	}
	d.skip()
	if d.i >= len(d.data) {
		return nil, io.ErrUnexpectedEOF
	}
	switch c := d.data[d.i]; {
	case c == '{':
		d.i++
		o := &object{}
		for {
			d.skip()
			if d.data[d.i] == '}' {
				d.i++
				return o, nil
			}
			if d.data[d.i] == ',' {
				d.i++
				d.skip()
			}
			k, err := d.str()
			if err != nil {
				return nil, err
			}
			d.skip()
			d.i++ // ':'
			v, err := d.value(depth + 1)
			if err != nil {
				return nil, err
			}
			o.keys = append(o.keys, k)
			o.vals = append(o.vals, v)
		}
	case c == '[':
		d.i++
		list := []any{}
		for {
			d.skip()
			if d.data[d.i] == ']' {
				d.i++
				return list, nil
			}
			if d.data[d.i] == ',' {
				d.i++
			}
			v, err := d.value(depth + 1)
			if err != nil {
				return nil, err
			}
			list = append(list, v)
		}
	case c == '"':
		return d.str()
	case c == 't':
		d.i += 4
		return true, nil
	case c == 'f':
		d.i += 5
		return false, nil
	case c == 'n':
		d.i += 4
		return nil, nil
	default:
		start := d.i
		for d.i < len(d.data) && strings.IndexByte("+-0123456789.eE", d.data[d.i]) >= 0 {
			d.i++
		}
		return json.Number(d.data[start:d.i]), nil
	}
}

// str reads a JSON string at d.i.
func (d *decoder) str() (string, error) {
	start := d.i
	d.i++
	escaped := false
	for d.i < len(d.data) {
		switch d.data[d.i] {
		case '\\':
			escaped = true
			d.i += 2
			continue
		case '"':
			d.i++
			raw := d.data[start:d.i]
			if !escaped && utf8.Valid(raw) {
				return string(raw[1 : len(raw)-1]), nil
			}
			var s string
			if err := json.Unmarshal(raw, &s); err != nil {
				return "", err
			}
			return s, nil
		}
		d.i++
	}
	return "", io.ErrUnexpectedEOF
}

// plain turns a decoded value into what encoding/json produces for it:
// *object becomes map[string]any (the last of duplicate keys wins).
func plain(v any) any {
	switch x := v.(type) {
	case *object:
		m := make(map[string]any, len(x.keys))
		for i, k := range x.keys {
			m[k] = plain(x.vals[i])
		}
		return m
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = plain(e)
		}
		return out
	}
	return v
}
