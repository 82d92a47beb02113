package main

import (
	"context"
	"errors"
	"io"
	"net/http"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	sdk "github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/responses"

	"github.com/madspark/madspark/provider/openai/openaitest"
)

// TestV1RetryableFailuresSaySo: `madspark serve` answers a provider that
// keeps refusing with 429 (its rate limit) and then, once the circuit
// breaker opened, 503 for every model, pipelines included, each with
// Retry-After in seconds and OpenAI's error shape, before any byte of a
// stream; the official client sees a RateLimitError and an
// InternalServerError it may retry.
func TestV1RetryableFailuresSaySo(t *testing.T) {
	fake := openaitest.NewServer(t, func(*openaitest.ChatRequest) openaitest.Reply {
		return openaitest.Reply{Fault: &openaitest.Fault{Status: 429, RetryAfter: "1", Message: "Rate limit reached for requests"}}
	})
	env := map[string]string{"MADSPARK_PROVIDER": "openai", "OPENAI_BASE_URL": fake.URL, "OPENAI_API_KEY": "sk-test",
		"MADSPARK_DB": filepath.Join(t.TempDir(), "m.db"), "MADSPARK_RATE_LIMIT": "off"}
	base, stop := startWebServe(t, env, "--no-worker", "--no-cache")
	defer stop()
	client := sdk.NewClient(option.WithBaseURL(base+"/v1"), option.WithAPIKey("x"), option.WithMaxRetries(0))
	ctx := context.Background()

	// A streamed request: 429 from the provider after madspark's own
	// retries, before the stream.
	post := func(body string) (*http.Response, string) {
		t.Helper()
		resp, err := http.Post(base+"/v1/chat/completions", "application/json", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp, string(b)
	}
	resp, body := post(`{"model":"madspark-direct","stream":true,"messages":[{"role":"user","content":"What is Rust?"}]}`)
	if resp.StatusCode != 429 || resp.Header.Get("Retry-After") != "1" || resp.Header.Get("Content-Type") != "application/json" ||
		!strings.Contains(body, `"type":"rate_limit_error"`) || !strings.Contains(body, "Rate limit reached") {
		t.Fatalf("rate limited: %d %v %s", resp.StatusCode, resp.Header, body)
	}

	// The next failure opens the circuit: 503 until its trial call.
	_, err := client.Chat.Completions.New(ctx, sdk.ChatCompletionNewParams{Model: "madspark-direct",
		Messages: []sdk.ChatCompletionMessageParamUnion{sdk.UserMessage("What is Go?")}})
	var apiErr *sdk.Error
	if !errors.As(err, &apiErr) || (apiErr.StatusCode != 503 && apiErr.StatusCode != 429) {
		t.Fatalf("the request that opened the circuit: %v", err)
	}
	for _, model := range []string{"madspark-direct", "madspark-spark", "madspark-debate"} {
		resp, body := post(`{"model":"` + model + `","stream":true,"messages":[{"role":"user","content":"urban farming"}]}`)
		secs, _ := strconv.Atoi(resp.Header.Get("Retry-After"))
		if resp.StatusCode != 503 || secs < 50 || secs > 60 || resp.Header.Get("Content-Type") != "application/json" ||
			!strings.Contains(body, `"code":"provider_paused"`) || !strings.Contains(body, "paused its calls") {
			t.Errorf("%s while paused: %d %v %s", model, resp.StatusCode, resp.Header, body)
		}
	}
	_, err = client.Responses.New(ctx, responsesParams("madspark-direct", "What is Go?"))
	if !errors.As(err, &apiErr) || apiErr.StatusCode != 503 || apiErr.Response.Header.Get("Retry-After") == "" {
		t.Errorf("responses while paused: %v", err)
	}
}

// responsesParams asks model for input through the Responses API.
func responsesParams(model, input string) responses.ResponseNewParams {
	return responses.ResponseNewParams{Model: model, Input: responses.ResponseNewParamsInputUnion{OfString: sdk.String(input)}}
}
