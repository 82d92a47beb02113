package openaitest

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/madspark/madspark/llm"
	"github.com/madspark/madspark/structured"
	"github.com/madspark/madspark/structured/replytest"
)

// review has a value of every kind the shapes change.
type review struct {
	Verdict    string   `json:"verdict" jsonschema:"enum=approve,enum=revise,enum=partially_approve"`
	Winner     string   `json:"winner" jsonschema:"enum=A,enum=B,enum=tie"`
	Confidence float64  `json:"confidence_score" jsonschema:"minimum=0,maximum=1"`
	Score      float64  `json:"overall_score" jsonschema:"minimum=0,maximum=10"`
	Budget     int      `json:"budget_eur"`
	Ready      bool     `json:"ready_to_ship"`
	KeyPoints  []string `json:"key_points"`
	Steps      []step   `json:"steps"`
	Note       string   `json:"note,omitempty"`
}

type step struct {
	Index int      `json:"index"`
	Title string   `json:"title"`
	Weeks int      `json:"weeks" jsonschema:"minimum=1,maximum=52"`
	Risks []string `json:"risks"`
}

// ideas is an object whose only field is a list.
type ideas struct {
	Ideas []struct {
		Title       string `json:"title"`
		Description string `json:"description"`
	} `json:"ideas"`
}

// TestSmallModelKeepsContent: every reply a SmallModel sends reads back,
// with the reader the pipelines use, as the value base sent, with at least
// one repair and one naming its format beyond JSON; a reply with a
// placeholder for a required text is refused, and one with a key under
// another name is read as the value or refused, never read otherwise; a
// re-ask is answered with the value; every shape and every format is
// used; the replies depend on the request and the seed only.
func TestSmallModelKeepsContent(t *testing.T) {
	reviewSpec, err := structured.NewSpec[review]("review")
	if err != nil {
		t.Fatal(err)
	}
	ideasSpec, err := structured.NewSpec[ideas]("ideas")
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		spec  structured.Reader
		clean string
	}{
		{reviewSpec, `{"verdict":"partially_approve","winner":"A","confidence_score":0.85,"overall_score":7.5,"budget_eur":12000,"ready_to_ship":false,
			"key_points":["Start with one \"street\" first","Measure the waste"],
			"steps":[{"index":0,"title":"Pilot","weeks":6,"risks":["Few volunteers"]},{"index":1,"title":"Scale","weeks":20,"risks":["Cost","Weather"]}]}`},
		{reviewSpec, `{"verdict":"revise","winner":"tie","confidence_score":0.5,"overall_score":3,"budget_eur":0,"ready_to_ship":true,
			"key_points":["One point"],"steps":[],"note":"Checked twice."}`},
		{ideasSpec, `{"ideas":[{"title":"Tool library","description":"Lend tools from the school shed."},{"title":"Seed swap","description":"Swap seeds each spring."}]}`},
		{ideasSpec, `{"ideas":[{"title":"Tool library","description":"Lend tools from the school shed."}]}`},
		{ideasSpec, `{"ideas":[{"title":"Tool library","description":"Lend the \"good\" tools from the shed."},{"title":"Seed swap","description":"Swap seeds each spring."}]}`},
	}
	used, formats := map[string]int{}, map[string]int{}
	refused := 0
	const replies = 150
	for ci, c := range cases {
		want := c.spec.Parse(context.Background(), c.clean)
		if !want.Usable || len(want.Repairs) != 0 {
			t.Fatalf("case %d: clean reply read as %+v", ci, want)
		}
		schema := c.spec.Schema()
		base := func(*ChatRequest) Reply { return Reply{Content: c.clean} }
		m, twin := NewSmallModel(base, 7), NewSmallModel(base, 7)
		for i := range replies {
			req := schemaRequest(schema, fmt.Sprintf("request %d", i))
			reply := m.Respond(req).Content
			log := m.Replies()
			at := len(log) - 1
			shaped := log[at]
			if (len(shaped.Shapes) == 0 && shaped.Format == replytest.FormatJSON) || shaped.Format == "" || shaped.Content != reply ||
				shaped.Schema != schema.Name || shaped.ReaskOf != -1 {
				t.Fatalf("case %d, reply %d: logged %+v", ci, i, shaped)
			}
			for _, s := range shaped.Shapes {
				used[s]++
			}
			formats[shaped.Format]++
			if again := twin.Respond(req).Content; again != reply {
				t.Fatalf("case %d, reply %d: the same request answered twice differently:\n%s\n%s", ci, i, reply, again)
			}
			got := c.spec.Parse(context.Background(), reply)
			asked := !got.Usable || len(got.Asks) > 0
			switch {
			case shaped.Unusable:
				if !asked {
					t.Fatalf("case %d, reply %d in %s, shapes %v, read as %s; it must be asked again\nreply:\n%s", ci, i, shaped.Format, shaped.Shapes, got.Value, reply)
				}
				refused++
				again := m.Respond(reaskRequest(req, reply, got.Problem))
				if last := m.Replies()[at+1]; last.ReaskOf != at || last.Unusable || last.MayAsk {
					t.Fatalf("case %d, reply %d: its re-ask logged %+v", ci, i, last)
				}
				if g := c.spec.Parse(context.Background(), again.Content); !g.Usable || !sameJSON(g.Value, want.Value) {
					t.Fatalf("case %d, reply %d: its re-ask read as %s (%s)\nreply:\n%s", ci, i, g.Value, g.Problem, again.Content)
				}
				twin.Respond(reaskRequest(req, reply, got.Problem))
				continue
			case shaped.MayAsk && asked:
				refused++
			case !got.Usable || !sameJSON(got.Value, want.Value):
				t.Fatalf("case %d, reply %d in %s, shapes %v, read as %s (%s), want %s\nreply:\n%s\nrepairs: %+v",
					ci, i, shaped.Format, shaped.Shapes, got.Value, got.Problem, want.Value, reply, got.Repairs)
			case len(got.Repairs) == 0:
				t.Fatalf("case %d, reply %d in %s, shapes %v, read without a repair:\n%s", ci, i, shaped.Format, shaped.Shapes, reply)
			case !NamesFormat(actions(got.Repairs), shaped.Format):
				t.Fatalf("case %d, reply %d in %s, shapes %v: no repair names the format: %+v\n%s", ci, i, shaped.Format, shaped.Shapes, got.Repairs, reply)
			}
		}
	}
	for _, s := range append(Shapes, ShapeBoldLabels) {
		if used[s] == 0 {
			t.Errorf("shape %q never used: %v", s, used)
		}
	}
	for _, f := range replytest.Formats {
		if formats[f] == 0 {
			t.Errorf("format %q never used: %v", f, formats)
		}
	}
	t.Logf("over %d replies, %d refused or asked again; formats %v; shapes %v", replies*len(cases), refused, formats, used)

	// Another seed gives other replies to the same requests.
	a := NewSmallModel(func(*ChatRequest) Reply { return Reply{Content: cases[0].clean} }, 1)
	b := NewSmallModel(func(*ChatRequest) Reply { return Reply{Content: cases[0].clean} }, 2)
	differ := 0
	for i := range 20 {
		req := schemaRequest(reviewSpec.Schema(), fmt.Sprint(i))
		if a.Respond(req).Content != b.Respond(req).Content {
			differ++
		}
	}
	if differ < 10 {
		t.Errorf("two seeds gave the same reply to %d of 20 requests", 20-differ)
	}
}

// TestSmallModelLeavesOthers: plain text, replies to requests without a
// schema, and replies with faults are sent as base gave them.
func TestSmallModelLeavesOthers(t *testing.T) {
	schema := &llm.Schema{Name: "s", JSON: []byte(`{"type":"object","properties":{"n":{"type":"number"}},"required":["n"]}`)}
	for _, tc := range []struct {
		name  string
		req   *ChatRequest
		reply Reply
	}{
		{"plain text", schemaRequest(schema, "x"), Reply{Content: "1. A tangent about tides."}},
		{"no schema", &ChatRequest{Body: []byte("x")}, Reply{Content: `{"n":1}`}},
		{"a fault", schemaRequest(schema, "x"), Reply{Content: `{"n":1}`, Fault: &Fault{Status: 500}}},
		{"a scalar", schemaRequest(schema, "x"), Reply{Content: `7`}},
	} {
		m := NewSmallModel(func(*ChatRequest) Reply { return tc.reply }, 3)
		if got, sent := m.Respond(tc.req), m.Replies()[0]; got.Content != tc.reply.Content || len(sent.Shapes) != 0 || sent.Format != "" || sent.ReaskOf != -1 {
			t.Errorf("%s: sent %q in %q, shapes %v", tc.name, got.Content, sent.Format, sent.Shapes)
		}
	}
}

// TestPromptSchemas: a request that names its schema only in the system
// prompt reaches respond with it as response_format; the recorded request
// is left alone.
func TestPromptSchemas(t *testing.T) {
	short := &llm.Schema{Name: "short", JSON: []byte(`{"type":"object"}`), Hint: `{"n": number}`}
	long := &llm.Schema{Name: "long", JSON: []byte(`{"type":"array"}`), Hint: `[{"n": number}]`}
	var got []string
	respond := PromptSchemas(func(req *ChatRequest) Reply {
		name := ""
		if req.ResponseFormat != nil {
			name = req.ResponseFormat.JSONSchema.Name + " " + string(req.ResponseFormat.JSONSchema.Schema)
		}
		got = append(got, name)
		return Reply{}
	}, short, long)
	sys := func(s string) *ChatRequest {
		return &ChatRequest{Messages: []Message{{Role: "system", Content: s}, {Role: "user", Content: "go"}}}
	}
	native := &ChatRequest{ResponseFormat: &ResponseFormat{Type: "json_schema", JSONSchema: &JSONSchema{Name: "sent"}}}
	reqs := []*ChatRequest{
		sys("Be brief.\n\nReply with only a JSON value of this shape: " + short.Hint),
		sys("Reply with only a JSON value of this shape: " + long.Hint),
		sys("No schema here."),
		native,
	}
	for _, r := range reqs {
		respond(r)
	}
	want := []string{`short {"type":"object"}`, `long {"type":"array"}`, "", "sent "}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("respond saw %q, want %q", got, want)
	}
	if reqs[0].ResponseFormat != nil {
		t.Fatal("the request was changed")
	}
	if js := SchemaOf(reqs[1], short, long); js == nil || js.Name != "long" {
		t.Fatalf("SchemaOf = %+v", js)
	}
}

// reaskRequest is req asked again after reply, as Generate asks.
func reaskRequest(req *ChatRequest, reply, problem string) *ChatRequest {
	cp := *req
	cp.Messages = append(append([]Message(nil), req.Messages...),
		Message{Role: "assistant", Content: reply}, Message{Role: "user", Content: "Your reply was not valid: " + problem})
	cp.Body = append(append([]byte(nil), req.Body...), " again"...)
	return &cp
}

func schemaRequest(s *llm.Schema, body string) *ChatRequest {
	return &ChatRequest{Body: []byte(body), ResponseFormat: &ResponseFormat{Type: "json_schema", JSONSchema: &JSONSchema{Name: s.Name, Schema: json.RawMessage(s.JSON)}}}
}

func sameJSON(a, b json.RawMessage) bool {
	var x, y any
	if json.Unmarshal(a, &x) != nil || json.Unmarshal(b, &y) != nil {
		return false
	}
	return reflect.DeepEqual(x, y)
}

// TestContent: repairs, usage, timing, run ids, timestamps and UUIDs are
// set aside at any depth, the fields named too; everything else is kept,
// and Diff names the first difference.
func TestContent(t *testing.T) {
	a := map[string]any{"run_id": "r1", "repairs": []any{1}, "items": []any{map[string]any{
		"score": 7, "judge_usage": map[string]any{"calls": 1}, "wall_ms": 5, "created_at": "x", "at": "2026-01-02T03:04:05.123Z",
		"conversation_id": "01a216b0-5c0f-7ac8-9b97-921a9d63186f", "dir": "/tmp/1", "points": []any{"a", "b"},
	}}}
	b := map[string]any{"run_id": "r2", "items": []any{map[string]any{"score": 7, "dir": "/tmp/2", "points": []any{"a", "b"}}}}
	ca, err := Content(a, "dir")
	if err != nil {
		t.Fatal(err)
	}
	cb, _ := Content(b, "dir")
	if ca != cb || !strings.Contains(ca, `"score": 7`) || !strings.Contains(ca, `"b"`) {
		t.Fatalf("content\n%s\nof the same result\n%s", ca, cb)
	}
	b["items"].([]any)[0].(map[string]any)["points"] = []any{"a", "c"}
	cb, _ = Content(b, "dir")
	if d := Diff(ca, cb); d != `at /items/0/points/1: "b", then "c"` {
		t.Fatalf("Diff = %s", d)
	}
}

func actions(repairs []structured.Repair) []string {
	var out []string
	for _, r := range repairs {
		out = append(out, r.Action)
	}
	return out
}
