// Package sparktest answers spark's agents over the OpenAI wire the way a
// model would, for tests that run spark against an openaitest.Server.
package sparktest

import (
	"encoding/json"
	"fmt"
	"regexp"
	"strings"

	"github.com/madspark/madspark/provider/openai/openaitest"
)

var (
	numIdeas = regexp.MustCompile(`Generate (\d+) innovative ideas`)
	itemLine = regexp.MustCompile(`(?m)^\[(\d+)\] `)
)

// Tokens are the usage every reply of Reply reports.
const (
	PromptTokens     = 100
	CompletionTokens = 50
)

// keys are the top-level keys of spark's replies, by schema name: what a
// schema's description in a system prompt names.
var keys = [][2]string{
	{"spark_ideas", `"ideas"`}, {"spark_evaluations", `"evaluations"`}, {"spark_advocacy", `"advocacies"`},
	{"spark_skepticism", `"skepticisms"`}, {"spark_improvements", `"improvements"`},
}

// Schema names the spark schema req asks for: its response_format's, or,
// when the schema went into the system prompt only, the one whose keys the
// prompt describes; "" for none.
func Schema(req *openaitest.ChatRequest) string {
	if req.ResponseFormat != nil && req.ResponseFormat.JSONSchema != nil {
		return req.ResponseFormat.JSONSchema.Name
	}
	system := req.System()
	if i := strings.LastIndex(system, "Reply with only a JSON value of this shape:"); i >= 0 {
		for _, k := range keys {
			if strings.Contains(system[i:], k[1]) {
				return k[0]
			}
		}
	}
	return ""
}

// Reply answers spark's agents from what the wire request says: the schema
// (Schema) and the numbered items in the prompt (its first user message), with PromptTokens and
// CompletionTokens. The evaluations come back in a Markdown fence, as some
// models send them.
func Reply(req *openaitest.ChatRequest) openaitest.Reply {
	schema := Schema(req)
	if schema == "" {
		return openaitest.Reply{Content: "no schema was sent"}
	}
	// The first user message is the agent's prompt; a re-ask comes after.
	prompt := req.Prompt()
	for _, m := range req.Messages {
		if m.Role == "user" {
			prompt = m.Content
			break
		}
	}
	n := len(itemLine.FindAllString(prompt, -1))
	items := func(f func(i int) map[string]any) []map[string]any {
		out := make([]map[string]any, n)
		for i := range out {
			out[i] = f(i)
			out[i]["index"] = i
		}
		return out
	}
	list := []string{"a point"}
	var v any
	fence := false
	switch schema {
	case "spark_ideas":
		m := numIdeas.FindStringSubmatch(prompt)
		var k int
		if m != nil {
			fmt.Sscan(m[1], &k)
		}
		ideas := make([]map[string]any, k)
		for i := range ideas {
			ideas[i] = map[string]any{"title": fmt.Sprintf("Live idea %d", i), "description": fmt.Sprintf("A distinct approach number %d with its own mechanism %c.", i, 'A'+i)}
		}
		v = map[string]any{"ideas": ideas}
	case "spark_evaluations":
		fence = true
		v = map[string]any{"evaluations": items(func(i int) map[string]any {
			return map[string]any{"score": 4 + float64(i%5), "critique": "Solid.", "strengths": list, "weaknesses": list, "suggestions": list}
		})}
	case "spark_advocacy":
		v = map[string]any{"advocacies": items(func(int) map[string]any {
			return map[string]any{"strengths": list, "opportunities": list, "addressing_concerns": list}
		})}
	case "spark_skepticism":
		v = map[string]any{"skepticisms": items(func(int) map[string]any {
			return map[string]any{"critical_flaws": list, "risks_and_challenges": list, "questionable_assumptions": list, "missing_considerations": list}
		})}
	case "spark_improvements":
		v = map[string]any{"improvements": items(func(i int) map[string]any {
			return map[string]any{"title": fmt.Sprintf("Better idea %d", i), "description": "Improved.", "key_improvements": list}
		})}
	default:
		return openaitest.Reply{Content: "unexpected schema " + schema}
	}
	b, _ := json.Marshal(v)
	text := string(b)
	if fence {
		text = "```json\n" + text + "\n```"
	}
	return openaitest.Reply{Content: text, PromptTokens: PromptTokens, CompletionTokens: CompletionTokens}
}

// EvalReply answers an eval of spark: spark's agents as Reply does, the
// baseline (a request without a schema) with one text, and the judge
// (schema eval_verdict) with a tie.
func EvalReply(req *openaitest.ChatRequest) openaitest.Reply {
	switch {
	case req.ResponseFormat != nil && req.ResponseFormat.JSONSchema != nil && req.ResponseFormat.JSONSchema.Name == "eval_verdict":
		return openaitest.Reply{Content: `{"winner": "tie", "reasons": "Both are fine."}`, PromptTokens: 100, CompletionTokens: 10}
	case req.ResponseFormat == nil:
		return openaitest.Reply{Content: "One answer to " + req.Prompt(), PromptTokens: 20, CompletionTokens: 20}
	}
	return Reply(req)
}
