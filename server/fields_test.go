package server

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"sort"
	"strings"
	"testing"

	"pgregory.net/rapid"

	"github.com/madspark/madspark/llm"
)

// Every field of both APIs is applied, or accepted only with the value
// that asks for nothing madspark does not do, or refused naming it: the
// catalogue below holds, for each field, values of each kind and what they
// must do, and the tests send them alone (every value, every kind of
// model) and mixed (a property over random requests).

// outcome is what a field's value must do.
type outcome int

const (
	// accepted: a value that asks for nothing different; the prompt is
	// the same as without it.
	accepted outcome = iota
	// applied: the prompt carries the value (effect), for a model that
	// takes its setting; one that does not is refused naming the field.
	applied
	// refused: a 400 naming param, for every model.
	refused
)

// fieldValue is one value of a field, as JSON, and what it does.
type fieldValue struct {
	json    string
	outcome outcome
	// setting is what an applied value asks of the model; param the
	// field a refusal names.
	setting Setting
	param   string
	// effect is what an applied value puts on the prompt.
	effect func(p *Prompt)
}

// field is a top-level field of one API and some of its values.
type field struct {
	name   string
	values []fieldValue
}

func ok(v string) fieldValue        { return fieldValue{json: v, outcome: accepted} }
func no(v, param string) fieldValue { return fieldValue{json: v, outcome: refused, param: param} }
func set(v string, s Setting, param string, effect func(p *Prompt)) fieldValue {
	return fieldValue{json: v, outcome: applied, setting: s, param: param, effect: effect}
}

// tagged is an applied value that labels the run with tags.
func tagged(v, param string, tags ...string) fieldValue {
	return set(v, SettingTags, param, func(p *Prompt) { p.Tags = append(p.Tags, tags...) })
}

// efforts are the applied values of a reasoning effort, param naming it.
func efforts(param string) []fieldValue {
	var out []fieldValue
	for _, e := range llm.ReasoningEfforts {
		out = append(out, set(`"`+e+`"`, SettingReasoningEffort, param, func(p *Prompt) { p.ReasoningEffort = e }))
	}
	return append(out, no(`"extreme"`, param), no(`"HIGH"`, param), ok(`""`))
}

// verbosities are the applied values of a verbosity, param naming it.
func verbosities(param string) []fieldValue {
	var out []fieldValue
	for _, v := range llm.Verbosities {
		out = append(out, set(`"`+v+`"`, SettingVerbosity, param, func(p *Prompt) { p.Verbosity = v }))
	}
	return append(out, no(`"terse"`, param), ok(`""`))
}

// commonFields are the fields both APIs share (see common).
func commonFields() []field {
	long := strings.Repeat("x", MaxTagLen)
	sha256 := strings.Repeat("9f86d081", 8) // a hashed identifier, as OpenAI advises
	var seventeen []string
	for i := range 17 {
		seventeen = append(seventeen, fmt.Sprintf(`"k%d":"v"`, i))
	}
	return []field{
		{"store", []fieldValue{ok(`false`), ok(`null`), no(`true`, "store")}},
		{"service_tier", []fieldValue{ok(`"auto"`), ok(`"default"`), ok(`""`), no(`"flex"`, "service_tier"), no(`"priority"`, "service_tier"), no(`"scale"`, "service_tier")}},
		{"prompt_cache_key", []fieldValue{ok(`""`), no(`"conversation-1"`, "prompt_cache_key")}},
		{"prompt_cache_retention", []fieldValue{ok(`""`), ok(`"in_memory"`), no(`"24h"`, "prompt_cache_retention")}},
		{"user", []fieldValue{ok(`""`), tagged(`"652ac880c4102a77fe54c5db"`, "user", "user=652ac880c4102a77fe54c5db"),
			no(`"`+long+`"`, "user"), no(`" padded"`, "user"), no(`"a\u0007b"`, "user"), no(`7`, "user")}},
		{"safety_identifier", []fieldValue{ok(`""`), tagged(`"9f86d081884c7d659a2f"`, "safety_identifier", "safety_identifier=9f86d081884c7d659a2f"),
			tagged(`"`+sha256+`"`, "safety_identifier", "safety_identifier="+sha256),
			no(`"`+long+`"`, "safety_identifier")}},
		{"metadata", []fieldValue{ok(`{}`), ok(`null`), tagged(`{"b":"2","a":"1"}`, "metadata", "a=1", "b=2"),
			no(`{"a":1}`, "metadata"), no(`["a"]`, "metadata"), no(`{`+strings.Join(seventeen, ",")+`}`, "metadata"),
			no(`{"app":"`+long+`x"}`, "metadata.app"), no(`{"`+strings.Repeat("k", 65)+`":"v"}`, "metadata")}},
	}
}

// chatFields are the fields of chat completions beside the messages,
// their model and stream.
func chatFields() []field {
	return append(commonFields(), []field{
		{"reasoning_effort", efforts("reasoning_effort")},
		{"verbosity", verbosities("verbosity")},
		{"n", []fieldValue{ok(`1`), ok(`null`), no(`2`, "n")}},
		{"logprobs", []fieldValue{ok(`false`), ok(`null`), no(`true`, "logprobs")}},
		{"top_logprobs", []fieldValue{ok(`0`), ok(`null`), no(`3`, "top_logprobs")}},
		{"presence_penalty", []fieldValue{ok(`0`), no(`0.5`, "presence_penalty")}},
		{"frequency_penalty", []fieldValue{ok(`0`), no(`-1`, "frequency_penalty")}},
		{"logit_bias", []fieldValue{ok(`{}`), ok(`null`), no(`{"50256":-100}`, "logit_bias")}},
		{"modalities", []fieldValue{ok(`["text"]`), ok(`[]`), ok(`null`), no(`["text","audio"]`, "modalities"), no(`["audio"]`, "modalities")}},
		{"prediction", []fieldValue{ok(`null`), no(`{"type":"content","content":"x"}`, "prediction")}},
		{"stream_options", []fieldValue{no(`{"include_usage":true}`, "stream_options")}}, // without stream
		{"audio", []fieldValue{no(`{"voice":"alloy","format":"mp3"}`, "audio")}},
		{"web_search_options", []fieldValue{no(`{}`, "web_search_options")}},
		{"functions", []fieldValue{ok(`[]`), no(`[{"name":"f"}]`, "functions")}},
		{"function_call", []fieldValue{ok(`"none"`), ok(`"auto"`), no(`{"name":"f"}`, "function_call")}},
	}...)
}

// responsesFields are the fields of the Responses API beside the input,
// its model and stream.
func responsesFields() []field {
	effort := efforts("reasoning.effort")
	reasoning := make([]fieldValue, 0, len(effort)+8)
	for _, v := range effort {
		v.json = `{"effort":` + v.json + `}`
		reasoning = append(reasoning, v)
	}
	reasoning = append(reasoning, ok(`null`), ok(`{}`), ok(`{"summary":"auto"}`), ok(`{"generate_summary":"auto"}`),
		no(`{"summary":"detailed"}`, "reasoning.summary"), no(`{"summary":"concise"}`, "reasoning.summary"),
		no(`{"generate_summary":"detailed"}`, "reasoning.generate_summary"), no(`{"summary":"long"}`, "reasoning.summary"),
		no(`{"effort":"low","budget":9}`, "budget"))
	text := []fieldValue{ok(`{}`), ok(`{"format":{"type":"text"}}`)}
	for _, v := range verbosities("text.verbosity") {
		v.json = `{"verbosity":` + v.json + `}`
		text = append(text, v)
	}
	include := []fieldValue{ok(`[]`), ok(`["web_search_call.action.sources","file_search_call.results"]`),
		no(`["message.output_text.logprobs"]`, "include[0]"), no(`["web_search_call.results","reasoning.encrypted_content"]`, "include[1]"),
		no(`["everything"]`, "include[0]")}
	return append(commonFields(), []field{
		{"reasoning", reasoning},
		{"text", text},
		{"include", include},
		{"top_logprobs", []fieldValue{ok(`0`), ok(`null`), no(`2`, "top_logprobs")}},
		{"truncation", []fieldValue{ok(`"disabled"`), ok(`""`), no(`"auto"`, "truncation")}},
		{"background", []fieldValue{ok(`false`), no(`true`, "background")}},
		{"max_tool_calls", []fieldValue{set(`0`, SettingMaxToolCalls, "max_tool_calls", func(p *Prompt) { p.MaxToolCalls = new(0) }),
			set(`5`, SettingMaxToolCalls, "max_tool_calls", func(p *Prompt) { p.MaxToolCalls = new(5) }), no(`-1`, "max_tool_calls")}},
		{"stream_options", []fieldValue{no(`{"include_obfuscation":false}`, "stream_options")}}, // without stream
		{"previous_response_id", []fieldValue{ok(`""`), ok(`null`), no(`"resp_1"`, "previous_response_id")}},
		{"conversation", []fieldValue{ok(`null`), no(`"conv_1"`, "conversation")}},
		{"prompt", []fieldValue{ok(`null`), no(`{"id":"pmpt_1"}`, "prompt")}},
	}...)
}

// modelKinds are the models the fields are sent to: one that takes every
// setting (madspark-direct and -debate), one that takes what a pipeline
// model takes, and one that takes none.
var modelKinds = []struct {
	id    string
	takes Setting
}{
	{"all", AllSettings},
	{"pipeline", SettingSystem | SettingTemperature | SettingTopP | SettingSeed | SettingMaxTokens | SettingStop | SettingReasoningEffort | SettingVerbosity | SettingTags},
	{"none", 0},
}

// fieldsServer serves a model of each kind.
func fieldsServer() (*Server, map[string]fixedModel, error) {
	models := map[string]fixedModel{}
	var list []Model
	for _, k := range modelKinds {
		m := fixedModel{newFake(k.id, "x"), k.takes}
		models[k.id] = m
		list = append(list, m)
	}
	s, err := New(Config{Models: list, MaxBodyBytes: 1 << 16})
	return s, models, err
}

// bodyOf is a request of api to model with the fields given (name: JSON).
func bodyOf(api, model string, fields [][2]string) string {
	var b strings.Builder
	fmt.Fprintf(&b, `{"model":%q`, model)
	if api == "chat" {
		b.WriteString(`,"messages":[{"role":"user","content":"hi"}]`)
	} else {
		b.WriteString(`,"input":"hi"`)
	}
	for _, f := range fields {
		fmt.Fprintf(&b, `,%q:%s`, f[0], f[1])
	}
	return b.String() + "}"
}

// readBody decodes body as the server reads a request of api.
func readBody(s *Server, api, body string) (*exchange, error) {
	decode := s.decodeChat
	if api == "responses" {
		decode = s.decodeResponses
	}
	x, _, err := s.read(&captureWriter{header: http.Header{}}, newRequest([]byte(body)), decode)
	return x, err
}

// paramOf is the status and param of a refusal.
func paramOf(err error) (int, string) {
	if err == nil {
		return http.StatusOK, ""
	}
	status, we := classify(err)
	if we.Param == nil {
		return status, ""
	}
	return status, *we.Param
}

// TestEveryFieldAlone: every value of every field of both APIs, alone, on
// every kind of model: applied (the prompt carries it), accepted (the
// prompt is as without it) or refused (400 naming the field).
func TestEveryFieldAlone(t *testing.T) {
	s, _, err := fieldsServer()
	if err != nil {
		t.Fatal(err)
	}
	for _, api := range []string{"chat", "responses"} {
		fields := chatFields()
		if api == "responses" {
			fields = responsesFields()
		}
		for _, kind := range modelKinds {
			base, err := readBody(s, api, bodyOf(api, kind.id, nil))
			if err != nil {
				t.Fatal(err)
			}
			for _, f := range fields {
				for _, v := range f.values {
					name := fmt.Sprintf("%s %s %s=%s", api, kind.id, f.name, v.json)
					x, err := readBody(s, api, bodyOf(api, kind.id, [][2]string{{f.name, v.json}}))
					want := v.outcome
					if want == applied && kind.takes&v.setting == 0 {
						want = refused
					}
					switch want {
					case refused:
						status, param := paramOf(err)
						if err == nil || status != 400 || param != v.param {
							t.Errorf("%s: %d %q (%v), want 400 naming %s", name, status, param, err, v.param)
						}
					case accepted:
						if err != nil {
							t.Errorf("%s: refused: %v", name, err)
						} else if !samePrompt(x.prompt, base.prompt) {
							t.Errorf("%s: prompt %+v, want it unchanged", name, x.prompt)
						}
					case applied:
						wantP := base.prompt
						v.effect(&wantP)
						if err != nil {
							t.Errorf("%s: refused: %v", name, err)
						} else if !samePrompt(x.prompt, wantP) {
							t.Errorf("%s: prompt %+v, want %+v", name, x.prompt, wantP)
						}
					}
				}
			}
		}
	}
}

// samePrompt compares what the fields above set on prompts.
func samePrompt(a, b Prompt) bool {
	ptr := func(p *int) string {
		if p == nil {
			return "nil"
		}
		return fmt.Sprint(*p)
	}
	return a.ReasoningEffort == b.ReasoningEffort && a.Verbosity == b.Verbosity && slices.Equal(a.Tags, b.Tags) &&
		ptr(a.MaxToolCalls) == ptr(b.MaxToolCalls) && a.System == b.System && len(a.Messages) == len(b.Messages) &&
		a.Temperature == nil && b.Temperature == nil && a.Format == nil && b.Format == nil && len(a.Tools) == len(b.Tools)
}

// TestFieldsMixed is the property over mixed requests: a request of
// either API to any kind of model, with any fields each set to any of its
// values, is refused naming a field whose value is refused (or that the
// model does not take) when there is one, and otherwise answered with a
// prompt that carries exactly the applied values — the others changing
// nothing.
func TestFieldsMixed(t *testing.T) {
	s, models, err := fieldsServer()
	if err != nil {
		t.Fatal(err)
	}
	catalogue := map[string][]field{"chat": chatFields(), "responses": responsesFields()}
	rapid.Check(t, func(t *rapid.T) {
		api := rapid.SampledFrom([]string{"chat", "responses"}).Draw(t, "api")
		kind := rapid.SampledFrom(modelKinds).Draw(t, "model")
		fields := catalogue[api]
		chosen := rapid.SliceOfNDistinct(rapid.IntRange(0, len(fields)-1), 0, 8, rapid.ID[int]).Draw(t, "fields")
		var sent [][2]string
		var refusals []string
		want := Prompt{Messages: []llm.Message{{Role: llm.RoleUser, Content: "hi"}}}
		var tags []string
		for _, i := range chosen {
			f := fields[i]
			v := rapid.SampledFrom(f.values).Draw(t, f.name)
			sent = append(sent, [2]string{f.name, v.json})
			switch {
			case v.outcome == refused, v.outcome == applied && kind.takes&v.setting == 0:
				refusals = append(refusals, v.param)
			case v.outcome == applied:
				var one Prompt
				v.effect(&one)
				tags = append(tags, one.Tags...)
				one.Tags = nil
				if one.ReasoningEffort != "" {
					want.ReasoningEffort = one.ReasoningEffort
				}
				if one.Verbosity != "" {
					want.Verbosity = one.Verbosity
				}
				if one.MaxToolCalls != nil {
					want.MaxToolCalls = one.MaxToolCalls
				}
			}
		}
		x, err := readBody(s, api, bodyOf(api, kind.id, sent))
		if len(refusals) > 0 {
			status, param := paramOf(err)
			if err == nil || status != 400 || !slices.Contains(refusals, param) {
				t.Fatalf("%d %q (%v), want 400 naming one of %q", status, param, err, refusals)
			}
			return
		}
		if err != nil {
			t.Fatalf("refused: %v", err)
		}
		// Tags come as the client's identifiers first, then the metadata
		// by key.
		sort.SliceStable(tags, func(i, j int) bool { return tagRank(tags[i]) < tagRank(tags[j]) })
		want.Tags = tags
		if !samePrompt(x.prompt, want) {
			t.Fatalf("prompt %+v, want %+v", x.prompt, want)
		}
	})
	for _, m := range models {
		if n := m.callCount(); n != 0 {
			t.Errorf("model %s ran %d times: decoding alone calls no model", m.ID(), n)
		}
	}
}

// tagRank orders tags as Prompt.Tags does.
func tagRank(tag string) int {
	switch {
	case strings.HasPrefix(tag, "user="):
		return 0
	case strings.HasPrefix(tag, "safety_identifier="):
		return 1
	}
	return 2
}

// TestStreamOnlyFields: stream_options is taken with stream true only:
// include_usage in chat, include_obfuscation false in both; obfuscation
// asked for, which madspark's events do not carry, is refused.
func TestStreamOnlyFields(t *testing.T) {
	s, _, err := fieldsServer()
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		api, options, param string
	}{
		{"chat", `{"include_usage":true}`, ""},
		{"chat", `{"include_usage":true,"include_obfuscation":false}`, ""},
		{"chat", `{"include_obfuscation":true}`, "stream_options.include_obfuscation"},
		{"responses", `{"include_obfuscation":false}`, ""},
		{"responses", `{}`, ""},
		{"responses", `{"include_obfuscation":true}`, "stream_options.include_obfuscation"},
		{"responses", `{"include_usage":true}`, "stream_options.include_usage"},
		{"responses", `{"chunk_size":4}`, "chunk_size"},
	} {
		_, err := readBody(s, tc.api, bodyOf(tc.api, "all", [][2]string{{"stream", "true"}, {"stream_options", tc.options}}))
		if _, param := paramOf(err); (tc.param == "") != (err == nil) || param != tc.param {
			t.Errorf("%s %s: %v, want param %q", tc.api, tc.options, err, tc.param)
		}
	}
}

// TestMessageNames: a chat's messages may name one participant per role
// (madspark passes no names on, so a name tells nothing apart) and a tool
// message the function whose call it answers; two participants of a role,
// or a tool message naming another function, are refused naming the
// message's name.
func TestMessageNames(t *testing.T) {
	s, _, err := fieldsServer()
	if err != nil {
		t.Fatal(err)
	}
	call := `{"role":"assistant","content":"","name":"model","tool_calls":[{"id":"c1","type":"function","function":{"name":"w","arguments":"{}"}}]}`
	for _, tc := range []struct{ messages, param string }{
		// LangChain's agents: the agent's name on its messages, the tool's
		// on a result.
		{`{"role":"user","content":"x"},` + call + `,{"role":"tool","content":"r","name":"w","tool_call_id":"c1"},{"role":"user","content":"y"}`, ""},
		// AutoGen: every user message named after its source.
		{`{"role":"system","content":"s","name":"sys"},{"role":"user","content":"x","name":"user"},{"role":"assistant","content":"a","name":"helper"},{"role":"user","content":"y","name":"user"}`, ""},
		{`{"role":"user","content":"x","name":"ann"},{"role":"assistant","content":"a"},{"role":"user","content":"y"}`, ""},
		{`{"role":"user","content":"x","name":"ann"},{"role":"assistant","content":"a"},{"role":"user","content":"y","name":"bob"}`, "messages[2].name"},
		{`{"role":"user","content":"x"},{"role":"assistant","content":"a","name":"one"},{"role":"assistant","content":"b","name":"two"},{"role":"user","content":"y"}`, "messages[2].name"},
		{`{"role":"user","content":"x"},` + call + `,{"role":"tool","content":"r","name":"other","tool_call_id":"c1"},{"role":"user","content":"y"}`, "messages[2].name"},
	} {
		_, err := readBody(s, "chat", `{"model":"all","messages":[`+tc.messages+`]}`)
		if _, param := paramOf(err); (tc.param == "") != (err == nil) || param != tc.param {
			t.Errorf("%s: %v, want param %q", tc.messages, err, tc.param)
		}
	}
}

// TestTurnsAfterTheQuestion: messages after the last user message (tool
// calls and results, an answer begun) reach a model that continues from
// them, and are refused by one that answers the last user message,
// naming the first of them as the client sent it.
func TestTurnsAfterTheQuestion(t *testing.T) {
	s, _, err := fieldsServer()
	if err != nil {
		t.Fatal(err)
	}
	call := `{"role":"assistant","content":null,"tool_calls":[{"id":"c1","type":"function","function":{"name":"w","arguments":"{}"}}]}`
	for _, tc := range []struct{ api, conversation, param string }{
		{"chat", `"messages":[{"role":"system","content":"s"},{"role":"user","content":"x"},` + call + `,{"role":"tool","content":"r","tool_call_id":"c1"}]`, "messages[2]"},
		{"chat", `"messages":[{"role":"user","content":"x"},{"role":"assistant","content":"The answer begins"}]`, "messages[1]"},
		{"chat", `"messages":[{"role":"user","content":"x"},{"role":"assistant","content":"a"},{"role":"user","content":"y"},{"role":"system","content":"s"}]`, ""},
		{"responses", `"input":[{"role":"user","content":"x"},{"type":"function_call","call_id":"c1","name":"w","arguments":"{}"},{"type":"function_call_output","call_id":"c1","output":"r"}]`, "input[1]"},
		{"responses", `"input":[{"role":"developer","content":"d"},{"role":"user","content":"x"},{"role":"assistant","content":"a"}]`, "input[2]"},
		{"responses", `"input":[{"role":"user","content":"x"},{"role":"assistant","content":"a"},{"role":"user","content":"y"}]`, ""},
	} {
		for _, kind := range []string{"all", "pipeline"} {
			x, err := readBody(s, tc.api, `{"model":"`+kind+`",`+tc.conversation+`}`)
			_, param := paramOf(err)
			switch {
			case tc.param == "" || kind == "all":
				if err != nil {
					t.Errorf("%s %s: %v", kind, tc.conversation, err)
				} else if _, _, turns := x.prompt.Split(); (len(turns) > 0) != (tc.param != "") {
					t.Errorf("%s %s: turns %+v", kind, tc.conversation, turns)
				}
			case err == nil || param != tc.param || !strings.Contains(err.Error(), "answers the last user message"):
				t.Errorf("%s %s: %v (param %q), want param %q", kind, tc.conversation, err, param, tc.param)
			}
		}
	}
}

// errModel fails with a provider's refusal of a setting.
type errModel struct{ param string }

func (errModel) ID() string { return "refuses" }

func (m errModel) Complete(context.Context, Prompt, *Stream) (*Completion, error) {
	return nil, &llm.Error{Provider: "anthropic", Param: m.param, Message: "anthropic: no such setting"}
}

// TestProviderRefusalNamesTheClientsField: a provider's refusal of a
// setting names the field as the client sent it: reasoning.effort and
// text.verbosity in the Responses API.
func TestProviderRefusalNamesTheClientsField(t *testing.T) {
	for _, tc := range []struct{ param, path, body, want string }{
		{"reasoning_effort", "/v1/responses", `{"model":"refuses","input":"hi","reasoning":{"effort":"minimal"}}`, "reasoning.effort"},
		{"verbosity", "/v1/responses", `{"model":"refuses","input":"hi","text":{"verbosity":"low"}}`, "text.verbosity"},
		{"reasoning_effort", "/v1/chat/completions", `{"model":"refuses","messages":[{"role":"user","content":"hi"}],"reasoning_effort":"minimal"}`, "reasoning_effort"},
		{"seed", "/v1/chat/completions", `{"model":"refuses","messages":[{"role":"user","content":"hi"}],"seed":1}`, "seed"},
	} {
		srv := newTestServer(t, "", errModel{tc.param})
		resp, body := do(t, http.MethodPost, srv.URL+tc.path, "", tc.body)
		e, _ := jsonMap(t, body)["error"].(map[string]any)
		if resp.StatusCode != 400 || e["param"] != tc.want {
			t.Errorf("%s: %d %s, want param %s", tc.body, resp.StatusCode, body, tc.want)
		}
	}
	if err := (given{}).rename(errors.New("plain")); err.Error() != "plain" {
		t.Errorf("rename changed a plain error: %v", err)
	}
}
