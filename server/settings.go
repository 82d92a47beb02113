package server

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"regexp"
	"strings"
	"time"

	"github.com/madspark/madspark/llm"
	"github.com/madspark/madspark/middleware"
)

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
			what := x.param
			if x.setting == SettingSystem {
				what = "system and developer messages (and instructions)"
			}
			return badRequest(x.param, "%s: model %s does not apply %s; leave it out", x.param, m.ID(), what)
		}
	}
	return nil
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

// admit checks the request (prepare), then asks Config.Admit, if set,
// whether a request for m may go on, and
// returns the context the model runs in (calls that wait for the provider
// rather than be refused once admitted) and the function that ends the
// admission. A refusal is an error answered 429 with Retry-After.
func (s *Server) admit(r *http.Request, m Model, p Prompt) (context.Context, func(), error) {
	if err := s.prepare(r, m, p); err != nil {
		return nil, nil, err
	}
	ctx := middleware.RefuseWhenBusy(r.Context())
	if s.cfg.Admit == nil {
		return ctx, func() {}, nil
	}
	return s.cfg.Admit(ctx)
}

// retryAfterHeader sets Retry-After from err's hint, in whole seconds.
func retryAfterHeader(h http.Header, err error) {
	if d := llm.RetryAfterOf(err); d > 0 {
		h.Set("Retry-After", fmt.Sprint(int((d+time.Second-1)/time.Second)))
	}
}

// isBusy reports whether err is a capacity refusal.
func isBusy(err error) bool { return errors.Is(err, middleware.ErrBusy) }

// systemText joins instructions as Prompt.System does.
func systemText(parts []string) string { return strings.Join(parts, "\n\n") }
