package debate

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/madspark/madspark"
	"github.com/madspark/madspark/document"
	"github.com/madspark/madspark/llm"
	"github.com/madspark/madspark/provider/mock"
)

// recorder keeps the requests a client was sent.
type recorder struct {
	llm.Client
	mu   sync.Mutex
	reqs []*llm.Request
}

func (r *recorder) Generate(ctx context.Context, req *llm.Request) (*llm.Response, error) {
	r.mu.Lock()
	cp := *req
	r.reqs = append(r.reqs, &cp)
	r.mu.Unlock()
	return r.Client.Generate(ctx, req)
}

func (r *recorder) of(agent string) []*llm.Request {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []*llm.Request
	for _, q := range r.reqs {
		if q.Agent == agent {
			out = append(out, q)
		}
	}
	return out
}

var weather = []llm.Tool{{Name: "weather", Description: "The weather in a city", Parameters: []byte(`{"type":"object","properties":{"city":{"type":"string"}},"required":["city"]}`)}}

// TestToolsReachTheAnswer: on both paths the step that writes the answer
// (direct, aggregate) gets the tools and the conversation turn by turn,
// its calls are the result's, and the calls' results sent back produce the
// answer; the proposers see the conversation up to the query, the same on
// both requests.
func TestToolsReachTheAnswer(t *testing.T) {
	for _, mode := range []string{"simple", "complex"} {
		rec := &recorder{Client: mock.New(MockResponders())}
		p := DefaultParams()
		p.Mode, p.NoSearch, p.Query, p.Tools = mode, true, "What is the weather in Oslo, and what should I wear?", weather
		p.History = []llm.Message{{Role: llm.RoleUser, Content: "Hi"}, {Role: llm.RoleAssistant, Content: "Hello! How can I help?"}}
		res, err := runDebate(t, rec, nil, p, nil)
		if err != nil {
			t.Fatalf("%s: %v", mode, err)
		}
		agent := map[string]string{"simple": agentDirect, "complex": agentAggregate}[mode]
		if len(res.ToolCalls) != 1 || res.ToolCalls[0].Name != "weather" || res.FinishReason != llm.FinishToolCalls || res.Answer != "" {
			t.Fatalf("%s: result %+v", mode, res)
		}
		first := rec.of(agent)[0]
		if len(first.Messages) != 3 || first.History != 2 || first.Messages[0].Content != "Hi" || !strings.Contains(first.Messages[2].Content, "Oslo") ||
			strings.Contains(first.Messages[2].Content, "Hello! How can I help?") || len(first.Tools) != 1 {
			t.Errorf("%s: the answer's request %+v", mode, first)
		}

		// The call's result sent back: the answer is written from it.
		calls := res.ToolCalls
		p.Turns = []llm.Message{{Role: llm.RoleAssistant, ToolCalls: calls}, {Role: llm.RoleTool, ToolCallID: calls[0].ID, Content: "12 °C, rain"}}
		res, err = runDebate(t, rec, nil, p, nil)
		if err != nil || res.Answer == "" || res.ToolCalls != nil || res.FinishReason != "stop" {
			t.Fatalf("%s: with the result: %+v, %v", mode, res, err)
		}
		second := rec.of(agent)[1]
		if n := len(second.Messages); n != 5 || second.Messages[3].ToolCalls[0].ID != calls[0].ID || second.Messages[4].Content != "12 °C, rain" {
			t.Errorf("%s: the second request %+v", mode, second.Messages)
		}
		if mode == "complex" {
			props := rec.of(agentPropose)
			prompts := func(reqs []*llm.Request) []string {
				var out []string
				for _, q := range reqs {
					out = append(out, q.System+q.Prompt())
				}
				slices.Sort(out)
				return out
			}
			if len(props) != 6 || !slices.Equal(prompts(props[:3]), prompts(props[3:])) {
				t.Errorf("the proposers were not asked the same on both requests: %d requests", len(props))
			}
			for _, q := range props {
				if len(q.Tools) != 0 || len(q.Messages) != 1 || strings.Contains(q.Prompt(), "12 °C") {
					t.Errorf("a proposer saw the tools or their results: %+v", q)
				}
			}
		}
	}
}

// TestToolParamsChecked: tools, tool choices and conversations that do
// not hold together are refused, naming what is wrong.
func TestToolParamsChecked(t *testing.T) {
	call := llm.ToolCall{ID: "c1", Name: "weather", Arguments: "{}"}
	yes := true
	for _, tc := range []struct {
		change func(p *Params)
		want   string
	}{
		{func(p *Params) { p.Tools = []llm.Tool{{Name: "bad name"}} }, "tools[0]"},
		{func(p *Params) { p.ToolChoice = &llm.ToolChoice{Mode: llm.ToolRequired} }, "without tools"},
		{func(p *Params) { p.ParallelToolCalls = &yes }, "parallel_tool_calls without tools"},
		{func(p *Params) { p.Turns = []llm.Message{{Role: llm.RoleTool, ToolCallID: "c1", Content: "x"}} }, `answers "c1"`},
		{func(p *Params) { p.Turns = []llm.Message{{Role: llm.RoleUser, Content: "x"}} }, "not user messages"},
		{func(p *Params) { p.Turns = []llm.Message{{Role: llm.RoleAssistant, Content: "x"}} }, "must call tools"},
		{func(p *Params) {
			p.Turns = []llm.Message{{Role: llm.RoleAssistant, ToolCalls: []llm.ToolCall{call, call}}}
		}, "used twice"},
		{func(p *Params) { p.History = []llm.Message{{Role: "system", Content: "x"}} }, `role "system"`},
	} {
		p := DefaultParams()
		p.Query = "q"
		tc.change(&p)
		if err := p.Validate(); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("want %q, got %v", tc.want, err)
		}
	}
	p := DefaultParams()
	p.Query, p.Tools = "q", weather
	p.History = []llm.Message{{Role: llm.RoleUser, Content: "q0"}, {Role: llm.RoleAssistant, ToolCalls: []llm.ToolCall{call}}, {Role: llm.RoleTool, ToolCallID: "c1", Content: "sunny"}, {Role: llm.RoleAssistant, Content: "It is sunny."}}
	p.Turns = []llm.Message{{Role: llm.RoleAssistant, ToolCalls: []llm.ToolCall{{ID: "c2", Name: "weather", Arguments: "{}"}}}, {Role: llm.RoleTool, ToolCallID: "c2", Content: "rain"}}
	if err := p.Validate(); err != nil {
		t.Errorf("a conversation with tool calls: %v", err)
	}
	if got := textHistory(p.History); got[1].Content != "[called weather({}), call c1]" || got[2].Content != "[result of call c1] sunny" || !got[3].Equal(p.History[3]) {
		t.Errorf("text history %+v", got)
	}
}

// TestToolCallsInTheDocument: a debate whose answer calls tools shows the
// calls where its answer would be.
func TestToolCallsInTheDocument(t *testing.T) {
	res := Result{Query: "weather?", Path: Simple, ToolCalls: []llm.ToolCall{{ID: "call_1", Name: "weather", Arguments: `{"city":"Oslo"}`}}, Repairs: []llm.Repair{}}
	b, _ := json.Marshal(res)
	doc, err := Document(&madspark.Run{ID: "r1", Result: b})
	if err != nil {
		t.Fatal(err)
	}
	if md := string(document.Markdown(doc)); !strings.Contains(md, `weather({"city":"Oslo"}) — call call\_1`) {
		t.Errorf("document:\n%s", md)
	}
}
