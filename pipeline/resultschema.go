package pipeline

import (
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"time"

	"github.com/invopop/jsonschema"
)

// ResultSchema returns the JSON Schema of the results of the pipeline's
// runs: Definition.ResultSchema as it is, or the schema derived from
// Definition.Result; nil when the pipeline gives neither.
//
// A derived schema describes the result's shape as encoding/json writes
// it: each field's type, the fields always present (those without
// omitempty or omitzero) as required, a list, map or pointer field as
// possibly null, and the titles and descriptions of struct tags. It leaves
// out value constraints (ranges, lengths, enums, patterns): those of a
// reply are targets its repairs aim at, not promises a result keeps (a
// reply with fewer items than asked is kept), and a client that checks a
// result against its schema must not refuse a usable one.
func (r *Registry) ResultSchema(name string) (json.RawMessage, error) {
	e, err := r.get(name)
	if err != nil {
		return nil, err
	}
	if e.result == nil {
		return nil, nil
	}
	return append(json.RawMessage(nil), e.result...), nil
}

// resultSchema is the result schema of d: given, derived or none.
func resultSchema(d Definition) (json.RawMessage, error) {
	if d.ResultSchema != nil {
		var obj map[string]any
		if err := json.Unmarshal(d.ResultSchema, &obj); err != nil {
			return nil, fmt.Errorf("result schema: %w", err)
		}
		return append(json.RawMessage(nil), d.ResultSchema...), nil
	}
	if d.Result == nil {
		return nil, nil
	}
	return DeriveResultSchema(d.Result)
}

// DeriveResultSchema derives the JSON Schema of values of t, a struct type
// or a pointer to one, as Registry.ResultSchema describes it.
func DeriveResultSchema(t reflect.Type) (json.RawMessage, error) {
	st := t
	for st.Kind() == reflect.Pointer {
		st = st.Elem()
	}
	if st.Kind() != reflect.Struct {
		return nil, fmt.Errorf("result schema: want a struct type, got %s", t)
	}
	rf := &jsonschema.Reflector{DoNotReference: true, ExpandedStruct: true, Anonymous: true, AllowAdditionalProperties: true,
		// Types are told apart by their package too: debate.Result holds
		// search.Result values.
		Namer: func(t reflect.Type) string {
			return strings.NewReplacer("/", "_", ".", "_").Replace(t.PkgPath()) + "_" + t.Name()
		}}
	s := rf.ReflectFromType(st)
	s.Version = ""
	b, err := json.Marshal(s)
	if err != nil {
		return nil, fmt.Errorf("result schema of %s: %w", t, err)
	}
	var node map[string]any
	if err := json.Unmarshal(b, &node); err != nil {
		return nil, fmt.Errorf("result schema of %s: %w", t, err)
	}
	shape(node, st)
	return json.Marshal(node)
}

// valueKeywords are the constraints on values that a result schema leaves
// out.
var valueKeywords = []string{"minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf",
	"minLength", "maxLength", "pattern", "minItems", "maxItems", "uniqueItems", "minProperties", "maxProperties",
	"enum", "const", "default", "examples", "readOnly"}

var timeType = reflect.TypeFor[time.Time]()

// shape walks node, the reflected schema of values of t, dropping value
// constraints and letting the lists, maps and pointers encoding/json may
// write as null be null.
func shape(node map[string]any, t reflect.Type) {
	if node == nil {
		return
	}
	for _, k := range valueKeywords {
		delete(node, k)
	}
	nullable := false
	for t.Kind() == reflect.Pointer {
		t, nullable = t.Elem(), true
	}
	if nullable || t.Kind() == reflect.Slice || t.Kind() == reflect.Map {
		allowNull(node)
	}
	if t == timeType {
		return
	}
	switch t.Kind() {
	case reflect.Struct:
		props, _ := node["properties"].(map[string]any)
		shapeFields(props, t)
	case reflect.Slice, reflect.Array:
		if t.Elem().Kind() == reflect.Uint8 {
			return // base64 text
		}
		items, _ := node["items"].(map[string]any)
		shape(items, t.Elem())
	case reflect.Map:
		if add, ok := node["additionalProperties"].(map[string]any); ok {
			shape(add, t.Elem())
		}
		if pp, ok := node["patternProperties"].(map[string]any); ok {
			for _, v := range pp {
				sub, _ := v.(map[string]any)
				shape(sub, t.Elem())
			}
		}
	}
}

// shapeFields shapes the properties of struct type t, those of its
// embedded structs included.
func shapeFields(props map[string]any, t reflect.Type) {
	for i := range t.NumField() {
		f := t.Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if name == "-" || (!f.IsExported() && !f.Anonymous) {
			continue
		}
		ft := f.Type
		if f.Anonymous && name == "" {
			for ft.Kind() == reflect.Pointer {
				ft = ft.Elem()
			}
			if ft.Kind() == reflect.Struct {
				shapeFields(props, ft)
				continue
			}
		}
		if name == "" {
			name = f.Name
		}
		sub, _ := props[name].(map[string]any)
		shape(sub, f.Type)
	}
}

// allowNull lets node's value be null too.
func allowNull(node map[string]any) {
	switch typ := node["type"].(type) {
	case string:
		if typ != "null" {
			node["type"] = []any{typ, "null"}
		}
	case []any:
		for _, t := range typ {
			if t == "null" {
				return
			}
		}
		node["type"] = append(typ, "null")
	}
}
