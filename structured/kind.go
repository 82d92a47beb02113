package structured

import "reflect"

// KindOf names, for an error message, the JSON type that decodes into t
// (the Type of a *json.UnmarshalTypeError): "a string", "an integer", "a
// number", "a boolean", "an array", "an object", or "JSON" for a
// json.RawMessage.
func KindOf(t reflect.Type) string {
	if t == nil {
		return "a different type"
	}
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch t.Kind() {
	case reflect.Bool:
		return "a boolean"
	case reflect.String:
		return "a string"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "an integer"
	case reflect.Float32, reflect.Float64:
		return "a number"
	case reflect.Slice, reflect.Array:
		if t.Elem().Kind() == reflect.Uint8 && t.Name() == "RawMessage" {
			return "JSON"
		}
		return "an array"
	case reflect.Map, reflect.Struct, reflect.Interface:
		return "an object"
	}
	return "a different type"
}
