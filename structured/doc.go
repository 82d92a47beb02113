// Package structured turns a language model's reply into a typed, validated Go
// value.
//
// A Spec[T] is built once per agent: it derives a JSON Schema from T (struct
// tags carry ranges, enums and descriptions, see github.com/invopop/jsonschema)
// and compiles a validator for it. Spec.Generate sends the schema to the
// provider as native structured output, then parses the reply tolerantly
// (Extract), validates it against the schema and T's own Validate method, and,
// if it still fails, sends it back once with the validation error. A reply
// that fails twice is a *ReplyError that names the agent and the problem and
// keeps the raw reply. Nothing is ever silently replaced by a default.
package structured
