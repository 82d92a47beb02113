package openai_test

import (
	"net/http"
	"testing"

	"github.com/madspark/madspark/llm"
	"github.com/madspark/madspark/provider/openai"
	"github.com/madspark/madspark/provider/providertest"
)

// TestCommon runs the checks every provider's client must pass, against a
// bare server of the chat completions wire.
func TestCommon(t *testing.T) {
	chunk := `data: {"id":"c1","object":"chat.completion.chunk","created":1,"model":"m",` +
		`"choices":[{"index":0,"delta":{"role":"assistant","content":"Hel"}}]}` + "\n\n"
	providertest.Run(t, providertest.Harness{Provider: openai.DefaultName, Key: testKey,
		Serve: func(t *testing.T, h http.HandlerFunc) (*providertest.Server, llm.Client) {
			s := providertest.NewServer(t, func(w http.ResponseWriter, r *http.Request, _ []byte) { h(w, r) })
			return s, openai.New(openai.Config{BaseURL: s.URL, APIKey: testKey})
		},
		StreamStart: func(w http.ResponseWriter) { providertest.SSE(w)(chunk) }})
}
