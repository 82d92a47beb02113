package pipeline

import (
	"fmt"
	"math"
	"reflect"
	"strings"
	"unicode/utf8"
)

// CheckValues reports the first value in v, a pipeline's parameters (a
// struct or a pointer to one), that no input path may pass on to a model
// or a store: a float that is NaN or infinite, or a string that is not
// valid UTF-8 or holds a NUL byte. The error is one line naming the field
// by its JSON name, in dotted form ("temperatures.generate",
// "seed_ideas[2]"). Every pipeline's Params.Validate calls it first, so
// that the CLI, batch files, the API and /v1 refuse the same values.
func CheckValues(v any) error {
	return checkValue(reflect.ValueOf(v), "")
}

func checkValue(v reflect.Value, path string) error {
	switch v.Kind() {
	case reflect.Pointer, reflect.Interface:
		if v.IsNil() {
			return nil
		}
		return checkValue(v.Elem(), path)
	case reflect.Float32, reflect.Float64:
		if f := v.Float(); math.IsNaN(f) || math.IsInf(f, 0) {
			return fmt.Errorf("%s must be a finite number, got %v", name(path), f)
		}
	case reflect.String:
		s := v.String()
		if !utf8.ValidString(s) {
			return fmt.Errorf("%s is not valid UTF-8", name(path))
		}
		if strings.IndexByte(s, 0) >= 0 {
			return fmt.Errorf("%s contains a NUL byte", name(path))
		}
	case reflect.Slice, reflect.Array:
		if v.Kind() == reflect.Slice && v.Type().Elem().Kind() == reflect.Uint8 {
			return nil // raw bytes, such as json.RawMessage
		}
		for i := range v.Len() {
			if err := checkValue(v.Index(i), fmt.Sprintf("%s[%d]", path, i)); err != nil {
				return err
			}
		}
	case reflect.Map:
		iter := v.MapRange()
		for iter.Next() {
			k := fmt.Sprint(iter.Key().Interface())
			if err := checkValue(iter.Key(), path+"."+k); err != nil {
				return err
			}
			if err := checkValue(iter.Value(), join(path, k)); err != nil {
				return err
			}
		}
	case reflect.Struct:
		t := v.Type()
		for i := range t.NumField() {
			f := t.Field(i)
			if !f.IsExported() {
				continue
			}
			tag, _, _ := strings.Cut(f.Tag.Get("json"), ",")
			if tag == "-" {
				continue
			}
			field := tag
			if field == "" {
				field = f.Name
			}
			if f.Anonymous && tag == "" {
				field = ""
			}
			if err := checkValue(v.Field(i), join(path, field)); err != nil {
				return err
			}
		}
	}
	return nil
}

func join(path, field string) string {
	switch {
	case field == "":
		return path
	case path == "":
		return field
	}
	return path + "." + field
}

func name(path string) string {
	if path == "" {
		return "value"
	}
	return path
}
