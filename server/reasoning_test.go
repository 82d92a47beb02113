package server

import (
	"bufio"
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	sdk "github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/responses"

	"github.com/madspark/madspark/llm"
)

// thinkingModel reports its stages as reasoning, then answers; a stage
// reported once the text began is not streamed.
type thinkingModel struct{}

func (thinkingModel) ID() string { return "madspark-spark" }

func (thinkingModel) Complete(_ context.Context, _ Prompt, out *Stream) (*Completion, error) {
	stages := []string{"generate: 5 ideas\n", "evaluate: scoring\n"}
	if out != nil {
		for _, s := range stages {
			out.Reasoning(s)
		}
		out.Text("# Ideas")
		out.Text(": urban farming")
		out.Reasoning("late\n")
	}
	return &Completion{Text: "# Ideas: urban farming", Reasoning: strings.Join(stages, ""), Usage: fakeUsage}, nil
}

// TestReasoningBeforeTheAnswer: a model's reasoning goes out before its
// answer: reasoning_content deltas in chat completions (a client that
// reads only content sees only the answer) and in the message when not
// streamed; in the Responses API a reasoning item with its summary
// events, then the message.
func TestReasoningBeforeTheAnswer(t *testing.T) {
	srv := newTestServer(t, "", thinkingModel{})
	client := sdk.NewClient(option.WithBaseURL(srv.URL+"/v1"), option.WithAPIKey("x"), option.WithMaxRetries(0))
	ctx := context.Background()
	msgs := []sdk.ChatCompletionMessageParamUnion{sdk.UserMessage("urban farming")}

	c, err := client.Chat.Completions.New(ctx, sdk.ChatCompletionNewParams{Model: "madspark-spark", Messages: msgs})
	if err != nil {
		t.Fatal(err)
	}
	var raw struct {
		ReasoningContent string `json:"reasoning_content"`
	}
	_ = json.Unmarshal([]byte(c.Choices[0].Message.RawJSON()), &raw)
	if c.Choices[0].Message.Content != "# Ideas: urban farming" || raw.ReasoningContent != "generate: 5 ideas\nevaluate: scoring\n" {
		t.Fatalf("message %s", c.Choices[0].Message.RawJSON())
	}

	// Streamed: the reasoning's deltas, then the content's.
	resp, body := do(t, http.MethodPost, srv.URL+"/v1/chat/completions", "", `{"model":"madspark-spark","stream":true,"messages":[{"role":"user","content":"urban farming"}]}`)
	if resp.StatusCode != 200 {
		t.Fatalf("%d %s", resp.StatusCode, body)
	}
	var order []string
	for _, d := range sseData(t, body) {
		if d == "[DONE]" {
			continue
		}
		var ch struct {
			Choices []struct {
				Delta map[string]any `json:"delta"`
			} `json:"choices"`
		}
		if err := json.Unmarshal([]byte(d), &ch); err != nil || len(ch.Choices) == 0 {
			continue
		}
		if r, ok := ch.Choices[0].Delta["reasoning_content"].(string); ok {
			order = append(order, "R:"+r)
		}
		if s, ok := ch.Choices[0].Delta["content"].(string); ok && s != "" {
			order = append(order, "C:"+s)
		}
	}
	if strings.Join(order, "|") != "R:generate: 5 ideas\n|R:evaluate: scoring\n|C:# Ideas|C:: urban farming" {
		t.Errorf("chunks %q", order)
	}
	stream := client.Chat.Completions.NewStreaming(ctx, sdk.ChatCompletionNewParams{Model: "madspark-spark", Messages: msgs})
	var acc sdk.ChatCompletionAccumulator
	for stream.Next() {
		acc.AddChunk(stream.Current())
	}
	if stream.Err() != nil || acc.Choices[0].Message.Content != "# Ideas: urban farming" {
		t.Errorf("content read by the SDK: %q, %v", acc.Choices[0].Message.Content, stream.Err())
	}

	// The Responses API: a reasoning item, then the message.
	r, err := client.Responses.New(ctx, responses.ResponseNewParams{Model: "madspark-spark", Input: responses.ResponseNewParamsInputUnion{OfString: sdk.String("urban farming")}})
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Output) != 2 || r.Output[0].Type != "reasoning" || r.Output[0].AsReasoning().Summary[0].Text != "generate: 5 ideas\nevaluate: scoring\n" ||
		r.OutputText() != "# Ideas: urban farming" {
		t.Fatalf("response %s", r.RawJSON())
	}
	rs := client.Responses.NewStreaming(ctx, responses.ResponseNewParams{Model: "madspark-spark", Input: responses.ResponseNewParamsInputUnion{OfString: sdk.String("urban farming")}})
	var types []string
	var summary, text string
	var final responses.Response
	for rs.Next() {
		ev := rs.Current()
		types = append(types, ev.Type)
		switch ev.Type {
		case "response.reasoning_summary_text.delta":
			summary += ev.Delta
		case "response.output_text.delta":
			text += ev.Delta
		case "response.completed":
			final = ev.Response
		}
	}
	if err := rs.Err(); err != nil {
		t.Fatal(err)
	}
	want := "response.created response.in_progress response.output_item.added response.reasoning_summary_part.added " +
		"response.reasoning_summary_text.delta response.reasoning_summary_text.delta response.reasoning_summary_text.done " +
		"response.reasoning_summary_part.done response.output_item.done response.output_item.added response.content_part.added " +
		"response.output_text.delta response.output_text.delta response.output_text.done response.content_part.done response.output_item.done response.completed"
	if strings.Join(types, " ") != want || summary != "generate: 5 ideas\nevaluate: scoring\n" || text != "# Ideas: urban farming" ||
		len(final.Output) != 2 || !strings.HasPrefix(final.Output[0].ID, "rs_") || final.Output[0].AsReasoning().Summary[0].Text != summary {
		t.Errorf("events %s\nsummary %q text %q final %s", types, summary, text, final.RawJSON())
	}
}

// TestReasoningStartsTheStream: the first reasoning starts a stream, so a
// client sees progress before the model has any text.
func TestReasoningStartsTheStream(t *testing.T) {
	gate := make(chan struct{})
	m := &gatedThinker{gate: gate}
	srv := newTestServer(t, "", m)
	req, _ := http.NewRequest(http.MethodPost, srv.URL+"/v1/chat/completions",
		strings.NewReader(`{"model":"gated","stream":true,"messages":[{"role":"user","content":"x"}]}`))
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	br := bufio.NewReader(resp.Body)
	first := readEvent(t, br)
	second := readEvent(t, br)
	close(gate)
	if !strings.Contains(first, `"role":"assistant"`) || !strings.Contains(second, `"reasoning_content":"thinking\n"`) {
		t.Fatalf("before the answer: %q, %q", first, second)
	}
}

// gatedThinker reasons, then holds its answer until gate is closed.
type gatedThinker struct{ gate chan struct{} }

func (*gatedThinker) ID() string { return "gated" }

func (m *gatedThinker) Complete(ctx context.Context, _ Prompt, out *Stream) (*Completion, error) {
	out.Reasoning("thinking\n")
	select {
	case <-m.gate:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	out.Text("done")
	return &Completion{Text: "done", Reasoning: "thinking\n"}, nil
}

// TestFinishReasonsInOpenAIsWords: a provider's own finish reasons reach
// a client as the OpenAI ones that mean the same.
func TestFinishReasonsInOpenAIsWords(t *testing.T) {
	for given, want := range map[string]string{"": "stop", "end_turn": "stop", "stop_sequence": "stop", "max_tokens": "length", "length": "length",
		"tool_use": "tool_calls", "safety": "content_filter", "stop": "stop", "tool_calls": "tool_calls"} {
		if got := finishReason(&Completion{FinishReason: given}); got != want {
			t.Errorf("%q → %q, want %q", given, got, want)
		}
	}
	if got := finishReason(&Completion{ToolCalls: []llm.ToolCall{{ID: "c", Name: "f"}}}); got != "tool_calls" {
		t.Errorf("calls → %q", got)
	}
	if status(&Completion{FinishReason: "max_tokens"}) != "incomplete" {
		t.Error("an answer cut off at Anthropic's max_tokens is not incomplete")
	}
}
