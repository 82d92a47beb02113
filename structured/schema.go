package structured

import (
	"encoding/json"
	"fmt"

	"github.com/invopop/jsonschema"
)

// NewSpecFromSchema builds the Spec of a JSON Schema given at run time (a
// pipeline file's declared outputs) rather than derived from a Go type. The
// reply is read exactly as NewSpec's are: the hard rules are the schema's
// types, required properties and enums; ranges, lengths and counts are
// repaired, and every repair is recorded. The schema must describe an
// object; references ($ref) are not supported.
func NewSpecFromSchema(name string, schema []byte) (*Spec[map[string]any], error) {
	var root jsonschema.Schema
	if err := json.Unmarshal(schema, &root); err != nil {
		return nil, fmt.Errorf("structured: schema of %s: %w", name, err)
	}
	if root.Type != "object" {
		return nil, fmt.Errorf("structured: schema of %s: the root must be an object, not %q", name, root.Type)
	}
	raw, v, err := compile(name, &root)
	if err != nil {
		return nil, err
	}
	return &Spec[map[string]any]{name: name, schema: raw, root: &root, v: v, hint: describe(&root), prune: true}, nil
}

// pruneUndeclared deletes from obj, recursively, the properties that s, an
// object schema with properties, does not declare.
func pruneUndeclared(s *jsonschema.Schema, obj map[string]any) {
	if s == nil || s.Properties == nil {
		return
	}
	for k, v := range obj {
		ps, ok := s.Properties.Get(k)
		if !ok {
			delete(obj, k)
			continue
		}
		pruneValue(ps, v)
	}
}

func pruneValue(s *jsonschema.Schema, v any) {
	switch x := v.(type) {
	case map[string]any:
		pruneUndeclared(s, x)
	case []any:
		if s != nil && s.Items != nil {
			for _, e := range x {
				pruneValue(s.Items, e)
			}
		}
	}
}
