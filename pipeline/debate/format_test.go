package debate

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/madspark/madspark/engine"
	"github.com/madspark/madspark/provider/openai"
	"github.com/madspark/madspark/provider/openai/openaitest"
	"github.com/madspark/madspark/store/sqlite"
	"github.com/madspark/madspark/structured"
)

// answerRequests are the requests that wrote answers: those without the
// debate's own schemas.
func answerRequests(srv *openaitest.Server) []*openaitest.ChatRequest {
	var out []*openaitest.ChatRequest
	for _, q := range srv.Requests() {
		if rf := q.ResponseFormat; rf == nil || rf.JSONSchema == nil || !strings.HasPrefix(rf.JSONSchema.Name, "debate_") {
			out = append(out, q)
		}
	}
	return out
}

// TestAnswerSettingsAndInstructions: the answer's settings reach the call
// that writes the answer, on both paths, with the asker's instructions
// after madspark's own; the proposers keep their own settings and are told
// the instructions; the answer carries the provider's finish reason.
func TestAnswerSettingsAndInstructions(t *testing.T) {
	topP, seed := 0.2, int64(9)
	answer := RoleConfig{Temperature: 1.3, MaxTokens: 40, TopP: &topP, Stop: []string{"END"}, Seed: &seed}
	for _, mode := range []string{"simple", "complex"} {
		t.Run(mode, func(t *testing.T) {
			q := query("Explain step by step how to design a rate limiter", func(p *Params) {
				p.Mode, p.NoSearch, p.Instructions = mode, true, "Answer in French."
				p.Roles[Direct], p.Roles[Aggregator] = answer, answer
			})
			cut := func(req *openaitest.ChatRequest) openaitest.Reply {
				r := wireReply(req)
				if req.ResponseFormat == nil {
					r.FinishReason = "length"
				}
				return r
			}
			res, srv, err := wireRun(t, cut, q)
			if err != nil {
				t.Fatal(err)
			}
			if res.FinishReason != "length" {
				t.Errorf("finish reason %q", res.FinishReason)
			}
			asked := answerRequests(srv)
			if len(asked) != 1 {
				t.Fatalf("%d answer requests", len(asked))
			}
			a := asked[0]
			own := map[string]string{"simple": "precise, helpful assistant", "complex": "aggregator of a structured debate"}[mode]
			sys := a.System()
			if !strings.Contains(sys, own) || !strings.HasSuffix(sys, "\n\nAnswer in French.") {
				t.Errorf("answer system prompt %q", sys)
			}
			if *a.Temperature != 1.3 || *a.MaxTokens != 40 || *a.TopP != 0.2 || fmt.Sprint(a.Stop) != "[END]" || *a.Seed != 9 {
				t.Errorf("answer settings: temperature %v, max_tokens %v, top_p %v, stop %q, seed %v", *a.Temperature, *a.MaxTokens, *a.TopP, a.Stop, *a.Seed)
			}
			for _, r := range srv.Requests() {
				if r == a {
					continue
				}
				if r.TopP != nil || r.Seed != nil || r.Stop != nil || *r.Temperature == 1.3 {
					t.Errorf("a proposer got the answer's settings: %s", r.Body)
				}
				if !strings.Contains(r.Prompt(), "must follow these instructions from the asker:\nAnswer in French.") {
					t.Errorf("a proposer was not told the instructions: %q", r.Prompt())
				}
			}
		})
	}
}

// formatRun runs a simple debate asking for format, against respond for
// the answer, streaming to onDelta.
func formatRun(t *testing.T, f *Format, respond func(req *openaitest.ChatRequest) string, onDelta func(string)) (*Result, *openaitest.Server, error) {
	t.Helper()
	srv := openaitest.NewServer(t, func(req *openaitest.ChatRequest) openaitest.Reply {
		return openaitest.Reply{Content: respond(req), PromptTokens: 5, CompletionTokens: 5}
	})
	client := openai.New(openai.Config{BaseURL: srv.URL, APIKey: "test", Model: "small-3b", Structured: openai.StructuredBoth})
	db, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "d.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	pipe, err := New(counter, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	p := query("What is a person?", func(p *Params) { p.Mode, p.Format = "simple", f })
	e := &engine.Engine{Store: db, Client: client}
	r, err := e.Start(context.Background(), engine.RunInfo{Pipeline: "debate", Params: p}, nil)
	if err != nil {
		t.Fatal(err)
	}
	res, err := pipe.Run(context.Background(), r, p, onDelta)
	_ = r.Finish(context.Background(), res, err)
	return res, srv, err
}

const personSchema = `{"type":"object","properties":{"name":{"type":"string"},"age":{"type":"integer","minimum":0,"maximum":150},` +
	`"code":{"type":"string","pattern":"^[A-Z]{3}$"}},"required":["name","age","code"],"additionalProperties":false}`

// TestAnswerFormat: an answer asked as JSON of a schema is read with the
// schema-aligned reader (repairs made and recorded), conforms to the schema
// as given, or fails with a ReplyError after one re-ask; it goes to the
// stream whole, once good; a schema whose root is not an object, and JSON
// mode, work too.
func TestAnswerFormat(t *testing.T) {
	var mu sync.Mutex
	var deltas []string
	onDelta := func(s string) { mu.Lock(); deltas = append(deltas, s); mu.Unlock() }

	// Fenced, a number as text, out of range, an undeclared field: repaired.
	f := &Format{Name: "person", Schema: Schema(personSchema), Strict: true}
	res, srv, err := formatRun(t, f, func(*openaitest.ChatRequest) string {
		return "Sure:\n```json\n{\"name\": \"Ada\", \"age\": \"236\", \"code\": \"ADA\", \"title\": \"Countess\"}\n```"
	}, onDelta)
	if err != nil {
		t.Fatal(err)
	}
	if res.Answer != `{"age":150,"code":"ADA","name":"Ada"}` || fmt.Sprint(deltas) != "["+res.Answer+"]" {
		t.Errorf("answer %s, deltas %q", res.Answer, deltas)
	}
	if len(res.Repairs) == 0 {
		t.Error("no repair recorded")
	}
	rf := srv.Requests()[0].ResponseFormat
	if rf == nil || rf.JSONSchema.Name != "person" || rf.JSONSchema.Strict == nil || !*rf.JSONSchema.Strict || srv.Requests()[0].Stream {
		t.Errorf("response_format %+v, streamed %v", rf, srv.Requests()[0].Stream)
	}

	// A pattern the reader does not repair: sent back once, then a clear
	// failure, never the invalid answer.
	deltas = nil
	_, srv, err = formatRun(t, f, func(*openaitest.ChatRequest) string { return `{"name":"Ada","age":36,"code":"ada"}` }, onDelta)
	var re *structured.ReplyError
	if !errors.As(err, &re) || !strings.Contains(err.Error(), "does not conform to the schema") || len(srv.Requests()) != 2 || len(deltas) != 0 {
		t.Fatalf("pattern violated twice: %v, %d requests, deltas %q", err, len(srv.Requests()), deltas)
	}
	if !strings.Contains(srv.Requests()[1].Prompt(), "/code") {
		t.Errorf("the re-ask does not name the problem: %q", srv.Requests()[1].Prompt())
	}
	// Fixed on the re-ask: used.
	n := 0
	res, _, err = formatRun(t, f, func(*openaitest.ChatRequest) string {
		n++
		if n == 1 {
			return "I cannot say."
		}
		return `{"name":"Ada","age":36,"code":"ADA"}`
	}, nil)
	if err != nil || res.Answer != `{"age":36,"code":"ADA","name":"Ada"}` {
		t.Fatalf("prose, then JSON: %v %q", err, res.Answer)
	}

	// A root that is not an object: asked as {"value": ...}, answered bare.
	list := &Format{Name: "tags", Schema: Schema(`{"$schema":"http://json-schema.org/draft-07/schema#","type":"array","items":{"type":"string"},"minItems":1}`)}
	var sent map[string]any
	res, _, err = formatRun(t, list, func(req *openaitest.ChatRequest) string {
		_ = json.Unmarshal(req.ResponseFormat.JSONSchema.Schema, &sent)
		return `{"value": ["go", "rust"]}`
	}, nil)
	if err != nil || res.Answer != `["go","rust"]` {
		t.Fatalf("array root: %v %q", err, res.Answer)
	}
	if props, _ := sent["properties"].(map[string]any); props["value"] == nil || sent["$schema"] == nil {
		t.Errorf("wrapped schema %v", sent)
	}

	// JSON mode: any object.
	res, _, err = formatRun(t, &Format{}, func(*openaitest.ChatRequest) string { return `{"x": [1, 2], "y": {"z": null}}` }, nil)
	if err != nil || res.Answer != `{"x":[1,2],"y":{"z":null}}` {
		t.Fatalf("JSON mode: %v %q", err, res.Answer)
	}
}

// TestCheckFormat: a format that cannot be read is refused before any
// call, saying why; a good one is compiled once.
func TestCheckFormat(t *testing.T) {
	pipe, err := New(counter, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		f    Format
		want string
	}{
		{Format{Name: "a b"}, "format.name"},
		{Format{Name: "x", Schema: Schema(`[1]`)}, "JSON Schema object"},
		{Format{Name: "x", Schema: Schema(`{"type":"object","properties":{"a":{"type":"wat"}}}`)}, "format.schema"},
		{Format{Name: "x", Schema: Schema(`{"type":"object","properties":{"a":{"$ref":"#/$defs/missing"}}}`)}, "format.schema"},
	} {
		if err := pipe.CheckFormat(&tc.f); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: %v, want %q", tc.f, err, tc.want)
		}
	}
	good := &Format{Name: "person", Schema: Schema(personSchema)}
	if err := pipe.CheckFormat(good); err != nil {
		t.Fatal(err)
	}
	a, _ := pipe.formats.get(good)
	b, _ := pipe.formats.get(&Format{Name: "person", Schema: Schema(personSchema)})
	if a != b {
		t.Error("the same format was compiled twice")
	}
	if err := pipe.CheckFormat(nil); err != nil {
		t.Errorf("no format: %v", err)
	}
}

// TestWrittenReadsOldJournals: a journaled answer from before it carried a
// finish reason still replays.
func TestWrittenReadsOldJournals(t *testing.T) {
	var w written
	if err := json.Unmarshal([]byte(`"an answer"`), &w); err != nil || w.Text != "an answer" || w.FinishReason != "" {
		t.Fatalf("%+v %v", w, err)
	}
	if err := json.Unmarshal([]byte(`{"text":"t","finish_reason":"length"}`), &w); err != nil || w.Text != "t" || w.FinishReason != "length" {
		t.Fatalf("%+v %v", w, err)
	}
}

// TestFormatSchemaStaysInside: a format whose schema points outside itself,
// or is too deep, is refused by Validate (the path of the REST API and
// MCP) and by CheckFormat (the path of /v1) before any run, naming what
// is refused, at once and without opening anything: the FIFO would block
// a reader for ever.
func TestFormatSchemaStaysInside(t *testing.T) {
	fifo := filepath.Join(t.TempDir(), "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	pipe, err := New(counter, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	deep := `{"type":"object","properties":{"a":` + strings.Repeat(`{"type":"array","items":`, 4000) + `{}` + strings.Repeat(`}`, 4000) + `}}`
	for _, tc := range []struct{ schema, want string }{
		{`{"type":"object","properties":{"a":{"$ref":"file://` + fifo + `"}}}`, `"file://` + fifo + `"`},
		{`{"type":"string","not":{"$ref":"file:///dev/stdin"}}`, `"file:///dev/stdin"`},
		{`{"$schema":"file://` + fifo + `","type":"object"}`, `"file://` + fifo + `"`},
		{`{"$schema":"http://127.0.0.1:1/meta.json","type":"object"}`, `"http://127.0.0.1:1/meta.json"`},
		{`{"type":"object","properties":{"a":{"$dynamicRef":"http://127.0.0.1:1/x"}}}`, `"http://127.0.0.1:1/x"`},
		{deep, "nests deeper than 64 levels"},
	} {
		done := make(chan struct{})
		go func() {
			defer close(done)
			f := &Format{Name: "x", Schema: Schema(tc.schema)}
			p := DefaultParams()
			p.Query, p.Format = "q", f
			if err := p.Validate(); err == nil || !strings.Contains(err.Error(), tc.want) || !strings.HasPrefix(err.Error(), "format.schema: ") {
				t.Errorf("Validate: %v, want format.schema: … %s", err, tc.want)
			}
			if err := pipe.CheckFormat(f); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("CheckFormat: %v, want %s", err, tc.want)
			}
		}()
		select {
		case <-done:
		case <-time.After(5 * time.Second):
			t.Fatalf("%.80s: not refused within 5 s", tc.schema)
		}
	}
	// A root that is not an object is asked for as {"value": …}: its $id
	// and definitions stay at the root, where its references find them.
	f := &Format{Name: "list", Schema: Schema(`{"$id":"https://example.com/list.json","type":"array","items":{"$ref":"#/$defs/item"},"$defs":{"item":{"type":"string"}}}`)}
	if err := pipe.CheckFormat(f); err != nil {
		t.Errorf("a list with an $id: %v", err)
	}
}
