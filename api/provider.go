package api

import (
	"net/http"
	"time"

	"github.com/madspark/madspark/failure"
	"github.com/madspark/madspark/middleware"
)

// The states of a provider's calls, as ProviderStatus names them.
const (
	providerOK     = "ok"
	providerPaused = "paused"
	providerTrial  = "trial"
)

// ProviderStatus is the answer of GET /api/provider: the model provider
// this server's runs call, and whether its calls go through now, so that a
// page can say so before anyone starts work.
type ProviderStatus struct {
	Mode     string `json:"mode"`
	Provider string `json:"provider"`
	Model    string `json:"model"`
	// Local reports a model served on this machine or its network (the
	// mock, Ollama, a local OpenAI-compatible server) rather than a
	// vendor's API; Address is the host and port such a server is reached
	// at, when it has one.
	Local   bool   `json:"local"`
	Address string `json:"address,omitempty"`
	// State is ok (calls go through), paused (after failures in a row,
	// calls fail at once until retry_at) or trial (the pause is over: the
	// next call decides whether calls go through again or stay paused).
	State string `json:"state" jsonschema:"enum=ok,enum=paused,enum=trial"`
	// Failures counts the provider's failures in a row.
	Failures int `json:"failures"`
	// RetryAt is when paused calls are tried again; null unless paused.
	RetryAt *time.Time `json:"retry_at" jsonschema:"nullable"`
	// Failure is the last failure that counted, when calls are paused or
	// on trial.
	Failure *failure.Failure `json:"failure,omitempty"`
}

func (h *Handler) providerStatus(w http.ResponseWriter, _ *http.Request) error {
	i := h.cfg.Info
	out := ProviderStatus{Mode: i.Mode, Provider: i.Provider, Model: i.Model, Local: i.ProviderLocal, Address: i.ProviderAddress, State: providerOK}
	if i.Breaker != nil {
		st := i.Breaker.Status()
		out.Failures = st.Failures
		switch st.State {
		case middleware.CircuitOpen:
			out.State = providerPaused
			t := st.RetryAt.UTC()
			out.RetryAt = &t
		case middleware.CircuitHalfOpen:
			out.State = providerTrial
		}
		if out.State != providerOK && st.LastError != "" {
			out.Failure = failure.Of(st.LastError)
		}
	}
	w.Header().Set("Cache-Control", "no-store")
	writeJSON(w, http.StatusOK, out)
	return nil
}
