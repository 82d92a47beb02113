package api

import (
	"net"
	"net/http"

	"github.com/madspark/madspark/failure"
)

// provider is what the client of r may be told of the model provider:
// its address only when the client is on this machine (the person who
// configured it), never otherwise.
func (h *Handler) provider(r *http.Request) failure.Provider {
	p := failure.Provider{Name: h.cfg.Info.Provider, Local: h.cfg.Info.ProviderLocal}
	if localClient(r) {
		p.Endpoint = h.cfg.Info.Endpoint
	}
	return p
}

// failureOf is msg, a run's or an answer's recorded error, in words for
// the client of r (package failure), its detail in plain words too; for a
// client elsewhere no field shows an address.
func (h *Handler) failureOf(r *http.Request, msg string) *failure.Failure {
	p := h.provider(r)
	f := failure.Explain(msg, p)
	if f != nil && !localClient(r) {
		f = f.ForRemote(p)
	}
	if f != nil {
		f.Detail = failure.Plain(f.Detail)
	}
	return f
}

// errorText is msg, a recorded error shown as the technical detail, as
// the client of r may read it: in plain words (failure.Plain), addresses
// hidden from a client elsewhere.
func (h *Handler) errorText(r *http.Request, msg string) string {
	if localClient(r) {
		return failure.Plain(msg)
	}
	return failure.Scrub(failure.Plain(msg))
}

// localClient reports whether r comes from this machine (a loopback
// address).
func localClient(r *http.Request) bool {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		host = r.RemoteAddr
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}
