package openai

import (
	"encoding/json"
	"reflect"
	"testing"
)

// chunkSeeds are chunks of the common shape and of every other one.
var chunkSeeds = []string{
	`{"id":"c1","object":"chat.completion.chunk","created":1,"model":"gpt-4o-mini","choices":[{"index":0,"delta":{"role":"assistant","content":""},"finish_reason":null}]}`,
	`{"id":"c1","object":"chat.completion.chunk","created":1,"model":"gpt-4o-mini","choices":[{"index":0,"delta":{"content":"token "},"logprobs":null,"finish_reason":null}]}`,
	`{"id":"c1","choices":[{"index":0,"delta":{},"finish_reason":"stop"}],"usage":null}`,
	`{"id":"c1","choices":[],"usage":{"prompt_tokens":20,"completion_tokens":5,"total_tokens":25,"prompt_tokens_details":{"cached_tokens":0}}}`,
	`{"choices":[{"index":1,"delta":{"content":"second"}},{"index":0,"delta":{"content":"caf\u00e9 \ud800 \"q\""}}]}`,
	`{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"call_1","type":"function","function":{"name":"f","arguments":"{}"}}]}}]}`,
	`{"error":{"message":"overloaded"}}`,
	`{"error":null,"choices":[]}`,
	`{"Model":"upper","CHOICES":[]}`,
	`{"choices":[{"Index":2,"delta":{"Content":"x"}}]}`,
	`{"choices":[{"index":1.5}]}`,
	`{"choices":[{"index":1e2}]}`,
	`{"choices":[{"index":99999999999999999999}]}`,
	`{"choices":[{"index":"0"}]}`,
	`{"choices":[null]}`,
	`{"choices":{"index":0}}`,
	`{"choices":[{"delta":null,"finish_reason":null}],"model":null}`,
	`{"model":5}`,
	`{"usage":{"prompt_tokens":-3,"completion_tokens":null}}`,
	`{"usage":[]}`,
	"{\"choices\":[{\"delta\":{\"content\":\"bad \xff byte\"}}]}",
	`{"choices":[{"delta":{"content":"0"}}],"choices":[{}]}`,
	`{"model":"a","model":"b","choices":[{"delta":{"content":"x"}}],"choices":[{"delta":{"content":"y"}}]}`,
	`[1,2]`,
	`"text"`,
	`null`,
	`{"choices":[{"index":01}]}`,
	`{"choices":[`,
	``,
}

// TestDecodeChunk: a chunk decodes as json.Unmarshal decodes it, or is
// refused as json.Unmarshal refuses it.
func TestDecodeChunk(t *testing.T) {
	for _, seed := range chunkSeeds {
		checkChunk(t, []byte(seed))
	}
}

func FuzzDecodeChunk(f *testing.F) {
	for _, seed := range chunkSeeds {
		f.Add([]byte(seed))
	}
	f.Fuzz(checkChunk)
}

func checkChunk(t *testing.T, data []byte) {
	var want, got streamChunk
	werr := json.Unmarshal(data, &want)
	gerr := decodeChunk(data, &got)
	if (werr == nil) != (gerr == nil) || werr != nil && werr.Error() != gerr.Error() {
		t.Fatalf("%s: error %v, want %v", data, gerr, werr)
	}
	if werr == nil && !reflect.DeepEqual(normal(got), normal(want)) {
		t.Fatalf("%s:\n got %+v\nwant %+v", data, got, want)
	}
}

// normal treats an empty list as none, which the reply does too.
func normal(c streamChunk) streamChunk {
	if len(c.Choices) == 0 {
		c.Choices = nil
	}
	for i := range c.Choices {
		if len(c.Choices[i].Delta.ToolCalls) == 0 {
			c.Choices[i].Delta.ToolCalls = nil
		}
	}
	return c
}
