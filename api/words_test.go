package api_test

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/madspark/madspark/api"
	"github.com/madspark/madspark/llm"
	"github.com/madspark/madspark/provider/openai"
)

// TestFailuresInWordsAddressForLocalClientsOnly: a run that fails because
// its provider (a server on this machine, down) cannot be reached is told
// in words — the 502 of a run made in the request, the run's record, its
// failure — naming the provider's address to a client on this machine,
// who configured it, and to no other client, in any field; no Go wording.
func TestFailuresInWordsAddressForLocalClientsOnly(t *testing.T) {
	const endpoint = "http://127.0.0.1:1/v1"
	hs := newHarness(t, options{
		client: func(llm.Client) llm.Client {
			return openai.New(openai.Config{BaseURL: endpoint, APIKey: "sk-test", Model: "m"})
		},
		config: func(c *api.Config) {
			c.Info.Provider, c.Info.Model, c.Info.Endpoint, c.Info.ProviderLocal = "openai", "m", endpoint, true
		},
	})
	do := func(method, path, remote string, body any) (int, string) {
		var b []byte
		if body != nil {
			b, _ = json.Marshal(body)
		}
		req := httptest.NewRequest(method, path, bytes.NewReader(b))
		req.Host = "127.0.0.1"
		req.RemoteAddr = remote
		if body != nil {
			req.Header.Set("Content-Type", "application/json")
		}
		w := httptest.NewRecorder()
		hs.srv.Handler().ServeHTTP(w, req)
		return w.Code, w.Body.String()
	}
	goWords := []string{"dial tcp", "connect: ", `Post \"`, "context canceled", "json: "}
	for _, c := range []struct {
		client, remote string
		local          bool
	}{{"this machine", "127.0.0.1:40000", true}, {"elsewhere", "203.0.113.7:40000", false}} {
		t.Run(c.client, func(t *testing.T) {
			status, body := do("POST", "/api/generate-ideas", c.remote, map[string]any{"topic": "urban farming", "num_candidates": 1, "num_top_candidates": 1})
			var e struct {
				Error struct {
					Message string `json:"message"`
				} `json:"error"`
				Failure struct {
					Kind, Message, Advice, Detail string
				} `json:"failure"`
			}
			if status != http.StatusBadGateway || json.Unmarshal([]byte(body), &e) != nil || e.Failure.Kind != "network" {
				t.Fatalf("%d %s", status, body)
			}
			runID := strings.Fields(strings.TrimPrefix(e.Error.Message, "run "))[0]
			_, rec := do("GET", "/api/runs/"+runID, c.remote, nil)
			for what, s := range map[string]string{"502": body, "run": rec} {
				shows := strings.Contains(s, "127.0.0.1") || strings.Contains(s, endpoint)
				if shows != c.local {
					t.Errorf("%s to a client %s shows the address: %v\n%s", what, c.client, shows, s)
				}
				for _, w := range goWords {
					if strings.Contains(s, w) {
						t.Errorf("%s says %q:\n%s", what, w, s)
					}
				}
			}
			want := "cannot reach madspark's model server: connection refused"
			if c.local {
				want = "cannot reach the provider at " + endpoint + ": connection refused"
			}
			if !strings.Contains(e.Error.Message, want) || !strings.Contains(e.Error.Message, "is the server running?") || !strings.Contains(rec, want) {
				t.Errorf("want %q in\n%s\n%s", want, body, rec)
			}
		})
	}
}
