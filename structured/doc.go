// Package structured turns a language model's reply into a typed Go value,
// keeping every reply that carries the content asked for.
//
// A Spec[T] is built once per agent: it derives a JSON Schema from T (struct
// tags carry ranges, enums and descriptions, see github.com/invopop/jsonschema),
// sends it to the provider as native structured output (with a compact
// description, Hint, for servers that do not enforce schemas), and reads the
// reply with two kinds of rules:
//
//   - Hard rules decide whether a reply is usable at all: a JSON value can be
//     extracted (Extract: whole text, code fence, first balanced value), every
//     required field is present, and every value has its type, once coerced.
//     A reply breaking them is sent back once with the problem; a second
//     unusable reply is a *ReplyError that names the agent and keeps the raw
//     reply.
//   - Soft rules repair what is usable but off: numbers sent as text, enum
//     values in another case or a known synonym, numbers out of range, lists
//     longer than their maximum or left out, and whatever T's Check (a
//     Checker) and the call's check report with Problems.Fix. Problems that
//     only the model can fix (Problems.Ask, a list shorter than its minimum,
//     an empty required text) are asked once, then repaired with what there
//     is.
//
// Every repair is recorded with llm.RecordRepair (the engine journals them
// with the step), and a reply enters the response cache only once it has
// been read and repaired (llm.Request.Deferred). Text does the same for
// plain-text replies.
package structured
