package server

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"regexp"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/madspark/madspark/failure"
	"github.com/madspark/madspark/llm"
	"github.com/madspark/madspark/structured"
)

// What both APIs' requests share, decoded alike: the settings a request
// gives and the model must apply, sampling, stop sequences, a JSON
// format, and the strict reading of a body.

// given records the request fields that set each Setting, as the client
// named them ("max_completion_tokens", "messages[0]"), so that a model that
// does not apply one is refused naming the field the client sent.
type given []struct {
	setting Setting
	param   string
}

func (g *given) add(s Setting, param string) {
	*g = append(*g, struct {
		setting Setting
		param   string
	}{s, param})
}

// check refuses the first setting m does not apply.
func (g given) check(m Model) error {
	c, ok := m.(Configurable)
	if !ok {
		return nil
	}
	takes := c.Settings()
	for _, x := range g {
		if takes&x.setting == 0 {
			switch x.setting {
			case SettingSystem:
				return badRequest(x.param, "%s: model %s does not apply system and developer messages (and instructions); leave it out", x.param, m.ID())
			case SettingTools:
				return badRequest(x.param, "tools: model %s has no step that calls tools; leave tools out, set tool_choice to \"none\", or use a model that calls them (madspark-direct)", m.ID())
			case SettingTurns:
				return badRequest(x.param, "%s: model %s answers the last user message, and nothing may follow it (an answer begun, tool calls or their results); end the conversation with the user's message", x.param, m.ID())
			case SettingTags:
				return badRequest(x.param, "%s: model %s does not record it with its run; leave it out", x.param, m.ID())
			}
			return badRequest(x.param, "%s: model %s does not apply %s; leave it out", x.param, m.ID(), x.param)
		}
	}
	return nil
}

// providerParams are the names a provider gives the settings it cannot
// take (llm.Error.Param), which a client may have sent under another
// name (reasoning.effort in the Responses API).
var providerParams = map[string]Setting{
	"reasoning_effort": SettingReasoningEffort, "verbosity": SettingVerbosity, "seed": SettingSeed, "tools": SettingTools,
}

// rename returns err naming the field as the client sent it, when it is
// a provider's refusal of a setting g records under another name.
func (g given) rename(err error) error {
	le, ok := errors.AsType[*llm.Error](err)
	if !ok {
		return err
	}
	s, ok := providerParams[le.Param]
	if !ok {
		return err
	}
	for _, x := range g {
		if x.setting == s && x.param != le.Param {
			cp := *le
			cp.Param = x.param
			return &cp
		}
	}
	return err
}

// common are the fields both APIs share that do not concern the answer's
// text: who asks (user, safety_identifier), labels (metadata), how the
// response is kept (store) and served (service_tier, the prompt cache's
// key and retention), decoded alike.
type common struct {
	Store                *bool           `json:"store"`
	Metadata             json.RawMessage `json:"metadata"`
	User                 string          `json:"user"`
	SafetyIdentifier     string          `json:"safety_identifier"`
	ServiceTier          string          `json:"service_tier"`
	PromptCacheKey       string          `json:"prompt_cache_key"`
	PromptCacheRetention string          `json:"prompt_cache_retention"`
}

// OpenAI's bounds on metadata.
const (
	maxMetadata         = 16
	maxMetadataKeyLen   = 64
	maxMetadataValueLen = 512
)

// apply checks c and puts what it asks on p, recording it in g: user,
// safety_identifier and metadata become the run's tags; the rest is
// accepted only with the value that asks for nothing madspark does not do.
func (c *common) apply(p *Prompt, g *given) error {
	switch {
	case c.Store != nil && *c.Store:
		return badRequest("store", "store: madspark keeps no responses to fetch or continue by their ID (every answer is recorded as a run instead, whose run_id the answer gives); leave store unset or false")
	case c.ServiceTier != "" && c.ServiceTier != "auto" && c.ServiceTier != "default":
		return badRequest("service_tier", "service_tier %q is not supported: madspark's calls use the provider's standard tier; leave it unset, auto or default", clip(c.ServiceTier, 40))
	case c.PromptCacheKey != "":
		return badRequest("prompt_cache_key", "prompt_cache_key is not supported: madspark does not route a provider's prompt cache by key; leave it unset")
	case c.PromptCacheRetention != "" && c.PromptCacheRetention != "in_memory":
		return badRequest("prompt_cache_retention", "prompt_cache_retention %q is not supported: madspark does not set how long a provider keeps its prompt cache; leave it unset or in_memory", clip(c.PromptCacheRetention, 40))
	}
	var tags []string
	add := func(param, key, value string) error {
		tag := key + "=" + value
		switch {
		case utf8.RuneCountInString(tag) > MaxTagLen:
			return badRequest(param, "%s: it is recorded as the run's tag %q, at most %d characters; %d are left for the value", param, clip(tag, 60), MaxTagLen, max(MaxTagLen-utf8.RuneCountInString(key)-1, 0))
		case strings.IndexFunc(tag, unicode.IsControl) >= 0:
			return badRequest(param, "%s must not contain control characters", param)
		case strings.TrimSpace(value) != value || strings.TrimSpace(key) != key:
			return badRequest(param, "%s must not begin or end with white space", param)
		}
		if !slices.Contains(tags, tag) {
			tags = append(tags, tag)
		}
		return nil
	}
	for _, id := range []struct{ param, value string }{{"user", c.User}, {"safety_identifier", c.SafetyIdentifier}} {
		if id.value == "" {
			continue
		}
		if err := add(id.param, id.param, id.value); err != nil {
			return err
		}
		g.add(SettingTags, id.param)
	}
	if !isNull(c.Metadata) {
		var md map[string]string
		if err := json.Unmarshal(c.Metadata, &md); err != nil {
			return badRequest("metadata", "metadata must be an object of strings")
		}
		if len(md) > maxMetadata {
			return badRequest("metadata", "metadata has %d pairs; at most %d", len(md), maxMetadata)
		}
		for _, k := range slices.Sorted(maps.Keys(md)) {
			param := "metadata." + k
			switch {
			case k == "" || utf8.RuneCountInString(k) > maxMetadataKeyLen:
				return badRequest("metadata", "metadata: a key is 1 to %d characters, got %q", maxMetadataKeyLen, clip(k, 80))
			case utf8.RuneCountInString(md[k]) > maxMetadataValueLen:
				return badRequest(param, "%s is longer than %d characters", param, maxMetadataValueLen)
			}
			if err := add(param, k, md[k]); err != nil {
				return err
			}
		}
		if len(md) > 0 {
			g.add(SettingTags, "metadata")
		}
	}
	p.Tags = tags
	return nil
}

// effort checks and applies a reasoning effort and a verbosity;
// effortParam and verbosityParam are where the request has them.
func effort(p *Prompt, g *given, effort, effortParam, verbosity, verbosityParam string) error {
	if effort != "" {
		if !slices.Contains(llm.ReasoningEfforts, effort) {
			return badRequest(effortParam, "%s %q is not one of %s", effortParam, clip(effort, 40), strings.Join(llm.ReasoningEfforts, ", "))
		}
		p.ReasoningEffort = effort
		g.add(SettingReasoningEffort, effortParam)
	}
	if verbosity != "" {
		if !slices.Contains(llm.Verbosities, verbosity) {
			return badRequest(verbosityParam, "%s %q is not one of %s", verbosityParam, clip(verbosity, 40), strings.Join(llm.Verbosities, ", "))
		}
		p.Verbosity = verbosity
		g.add(SettingVerbosity, verbosityParam)
	}
	return nil
}

// obfuscation checks stream_options.include_obfuscation: madspark's
// stream events carry no padding that hides their length.
func obfuscation(include *bool) error {
	if include != nil && *include {
		return badRequest("stream_options.include_obfuscation", "stream_options.include_obfuscation: madspark's stream events carry no obfuscation padding; leave it unset or false")
	}
	return nil
}

// positions track where each message of a Prompt was in the request: the
// index of its item in field (-1 for the field itself, Responses' input as
// a string), so that the first message after the last user message can
// be named.
type positions struct {
	field string
	at    []int
}

func (ps *positions) add(i int) { ps.at = append(ps.at, i) }

// turns records, in g, the first message of p after its last user
// message, which only a model that continues from it may take.
func (ps positions) turns(p *Prompt, g *given) {
	for i := len(p.Messages) - 1; i >= 0; i-- {
		if p.Messages[i].Role == llm.RoleUser {
			if i+1 < len(p.Messages) {
				param := ps.field
				if k := ps.at[i+1]; k >= 0 {
					param = fmt.Sprintf("%s[%d]", ps.field, k)
				}
				g.add(SettingTurns, param)
			}
			return
		}
	}
}

// sampling are the sampling settings both APIs share, decoded.
type sampling struct {
	temperature, topP *float64
	maxTokens         *int
	maxTokensParam    string
}

// apply checks the settings and puts them on p, recording them in g.
func (s sampling) apply(p *Prompt, g *given) error {
	switch {
	case s.temperature != nil && (*s.temperature < 0 || *s.temperature > 2):
		return badRequest("temperature", "temperature must be between 0 and 2, got %g", *s.temperature)
	case s.topP != nil && (*s.topP < 0 || *s.topP > 1):
		return badRequest("top_p", "top_p must be between 0 and 1, got %g", *s.topP)
	case s.maxTokens != nil && *s.maxTokens < 1:
		return badRequest(s.maxTokensParam, "%s must be positive, got %d", s.maxTokensParam, *s.maxTokens)
	}
	if s.temperature != nil {
		p.Temperature = s.temperature
		g.add(SettingTemperature, "temperature")
	}
	if s.topP != nil {
		p.TopP = s.topP
		g.add(SettingTopP, "top_p")
	}
	if s.maxTokens != nil {
		p.MaxTokens = *s.maxTokens
		g.add(SettingMaxTokens, s.maxTokensParam)
	}
	return nil
}

// maxStop is how many stop sequences a request may give (OpenAI's limit).
const maxStop = 4

// stopOf reads stop: a string, a list of up to maxStop strings, or null.
func stopOf(raw json.RawMessage) ([]string, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil
	}
	var list []string
	if raw[0] == '"' {
		var one string
		if err := json.Unmarshal(raw, &one); err != nil {
			return nil, badRequest("stop", "stop must be a string or a list of strings")
		}
		list = []string{one}
	} else if err := json.Unmarshal(raw, &list); err != nil {
		return nil, badRequest("stop", "stop must be a string or a list of strings")
	}
	if len(list) > maxStop {
		return nil, badRequest("stop", "stop takes at most %d sequences, got %d", maxStop, len(list))
	}
	for i, s := range list {
		if s == "" {
			return nil, badRequest("stop", "stop[%d] is empty", i)
		}
	}
	return list, nil
}

// wireFormat is a JSON answer as a client asks for one: Chat Completions'
// response_format (with json_schema) or Responses' text.format (the
// json_schema fields inline).
type wireFormat struct {
	Type       string          `json:"type"`
	JSONSchema *wireSchema     `json:"json_schema"`
	Name       string          `json:"name"`
	Schema     json.RawMessage `json:"schema"`
	Strict     *bool           `json:"strict"`
	// Description tells the model what the answer is for; it is put in the
	// schema's description.
	Description string `json:"description"`
}

type wireSchema struct {
	Name        string          `json:"name"`
	Description string          `json:"description"`
	Schema      json.RawMessage `json:"schema"`
	Strict      *bool           `json:"strict"`
}

var schemaName = regexp.MustCompile(`^[A-Za-z0-9_-]{1,64}$`)

// formatOf checks a format; param is where it is in the request
// ("response_format", "text.format"), and nested tells the Responses shape
// (json_schema fields inline) from the Chat Completions one. It returns
// nil for plain text.
func formatOf(f *wireFormat, param string, nested bool) (*Format, error) {
	if f == nil {
		return nil, nil
	}
	switch f.Type {
	case "text":
		return nil, nil
	case "json_object":
		return &Format{}, nil
	case "json_schema":
	default:
		return nil, badRequest(param+".type", "%s.type %q is not supported; want text, json_object or json_schema", param, f.Type)
	}
	where := param
	s := wireSchema{Name: f.Name, Description: f.Description, Schema: f.Schema, Strict: f.Strict}
	if nested {
		if f.JSONSchema == nil {
			return nil, badRequest(param+".json_schema", "%s.json_schema is required with type json_schema", param)
		}
		s, where = *f.JSONSchema, param+".json_schema"
	}
	if !schemaName.MatchString(s.Name) {
		return nil, badRequest(where+".name", "%s.name must be 1 to 64 letters, digits, _ or -, got %q", where, clip(s.Name, 80))
	}
	out := &Format{Name: s.Name, Strict: s.Strict != nil && *s.Strict, param: where + ".schema"}
	schema := bytes.TrimSpace(s.Schema)
	if len(schema) == 0 || string(schema) == "null" {
		return out, nil
	}
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(schema, &obj); err != nil {
		return nil, badRequest(where+".schema", "%s.schema must be a JSON Schema object", where)
	}
	if s.Description != "" {
		if _, ok := obj["description"]; !ok {
			obj["description"], _ = json.Marshal(s.Description)
			schema, _ = json.Marshal(obj)
		}
	}
	out.Schema = append(json.RawMessage(nil), schema...)
	return out, nil
}

// systemText joins instructions as Prompt.System does.
func systemText(parts []string) string { return strings.Join(parts, "\n\n") }

// decodeStrict decodes body into v as one JSON object with no unknown
// fields.
func decodeStrict(body []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		if te, ok := errors.AsType[*json.UnmarshalTypeError](err); ok && te.Field != "" {
			// The fields of an embedded struct (common) are the
			// request's own.
			field := strings.TrimPrefix(te.Field, "common.")
			return badRequest(field, "%s must be %s, not %s", field, structured.KindOf(te.Type), te.Value)
		}
		if f, ok := strings.CutPrefix(err.Error(), "json: unknown field "); ok {
			return badRequest(strings.Trim(f, `"`), "unknown field %s", f)
		}
		if errors.Is(err, io.EOF) {
			return badRequest("", "request body is empty; want a JSON object")
		}
		return badRequest("", "request body is not valid JSON: %s", failure.Plain(oneLine(strings.TrimPrefix(err.Error(), "json: "))))
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return badRequest("", "request body has data after the JSON object")
	}
	return nil
}

func isNull(raw json.RawMessage) bool {
	raw = bytes.TrimSpace(raw)
	return len(raw) == 0 || string(raw) == "null"
}

// nonEmptyList reports whether raw is a JSON array with at least one item.
func nonEmptyList(raw json.RawMessage) bool {
	var list []json.RawMessage
	return json.Unmarshal(raw, &list) == nil && len(list) > 0
}

// nonEmptyObject reports whether raw is a JSON object with a member.
func nonEmptyObject(raw json.RawMessage) bool {
	var obj map[string]json.RawMessage
	return json.Unmarshal(raw, &obj) == nil && len(obj) > 0
}

// isString reports whether raw is a JSON string, one of values.
func isString(raw json.RawMessage, values ...string) bool {
	var s string
	return json.Unmarshal(raw, &s) == nil && slices.Contains(values, s)
}
