package structured

// NewSpecFromSchema builds the Spec of a JSON Schema given at run time (a
// pipeline file's declared outputs, a client's response format) rather
// than derived from a Go type. The reply is read exactly as NewSpec's
// are: the hard rules are the schema's types, required properties and
// enums; ranges, lengths and counts are repaired, and every repair is
// recorded. The schema must describe an object; local references ($ref
// into $defs or definitions) are resolved.
func NewSpecFromSchema(name string, schema []byte) (*Spec[map[string]any], error) {
	s, err := newSpec[map[string]any](name, schema)
	if err != nil {
		return nil, err
	}
	if !s.node.is("object") {
		return nil, &schemaRootError{name}
	}
	return s, nil
}

// NewSpecFromAnySchema is NewSpecFromSchema for a schema whose root may
// be any value: a list, a text, a number, an object.
func NewSpecFromAnySchema(name string, schema []byte) (*Spec[any], error) {
	return newSpec[any](name, schema)
}

type schemaRootError struct{ name string }

func (e *schemaRootError) Error() string {
	return "structured: schema of " + e.name + ": the root must be an object"
}
