// Package failure says what kind of failure a run's error is, so that the
// people who meet it can be told in plain words what happened and what to
// do: the provider failing (a server error, a rate limit, a paused
// provider), a refused key, no network, a literature search that reached
// no source, bad parameters, an unusable reply, a timeout.
//
// It reads the one-line error a run records (madspark.Run.Error), which is
// what every layer's wrapped error prints: a stored run has nothing else,
// and a live error's text is the same line. The patterns are the ones the
// provider packages (llm.Error: "openai: HTTP 500: …"), the retry and
// circuit-breaker decorators, the registry's parameter errors, package
// structured's reply errors, the literature search and the engine write;
// their tests build those errors with the real code and classify them.
package failure

import (
	"regexp"
	"strconv"
	"strings"
	"time"
)

// Kind names a kind of failure.
type Kind string

// The kinds of failure.
const (
	// ProviderError is a server error of the model provider (HTTP 5xx, a
	// broken connection after retries).
	ProviderError Kind = "provider_error"
	// RateLimited is the provider refusing more requests for now (429).
	RateLimited Kind = "rate_limited"
	// ProviderPaused is madspark's circuit breaker holding calls back
	// after the provider failed several times in a row; RetryAt says
	// when it lets the next call through.
	ProviderPaused Kind = "provider_paused"
	// Auth is the provider refusing the API key (401, 403).
	Auth Kind = "auth"
	// ProviderRefused is the provider refusing the request itself (another
	// 4xx: an unknown model, a request too large).
	ProviderRefused Kind = "provider_refused"
	// Network is the provider or a source out of reach: no connection, no
	// DNS, a connection reset.
	Network Kind = "network"
	// Timeout is a call, a stage or the run taking longer than allowed.
	Timeout Kind = "timeout"
	// SearchUnavailable is a literature or web search that reached no
	// source at all.
	SearchUnavailable Kind = "search_unavailable"
	// Params is a parameter the pipeline refused; Field names it.
	Params Kind = "params"
	// ReplyUnusable is a model reply that could not be used even after it
	// was sent back once.
	ReplyUnusable Kind = "reply_unusable"
	// Interrupted is a run whose process stopped before it finished.
	Interrupted Kind = "interrupted"
	// Cancelled is a run stopped on request.
	Cancelled Kind = "cancelled"
	// Unknown is any other failure.
	Unknown Kind = "unknown"
)

// Failure is what kind of failure an error is, with the details a message
// for people needs.
type Failure struct {
	Kind Kind `json:"kind" jsonschema:"enum=provider_error,enum=rate_limited,enum=provider_paused,enum=auth,enum=provider_refused,enum=network,enum=timeout,enum=search_unavailable,enum=params,enum=reply_unusable,enum=interrupted,enum=cancelled,enum=unknown"`
	// Provider names the model provider at fault, such as "openai", when
	// the error says.
	Provider string `json:"provider,omitempty"`
	// Status is the provider's HTTP status, when there was one.
	Status int `json:"status,omitempty"`
	// RetryAt is when a paused provider is tried again.
	RetryAt *time.Time `json:"retry_at,omitempty"`
	// Field is the parameter at fault ("profile.missing_skills"), for
	// Params.
	Field string `json:"field,omitempty"`
	// Detail is the error itself, for the technical detail under the
	// plain words.
	Detail string `json:"detail"`
}

var (
	breakerRe   = regexp.MustCompile(`circuit breaker open`)
	retryAtRe   = regexp.MustCompile(`next trial call at (\S+)`)
	httpRe      = regexp.MustCompile(`(?:^|[\s:(])([a-z][a-z0-9_-]*): HTTP (\d{3})\b`)
	anyHTTPRe   = regexp.MustCompile(`\bHTTP (\d{3})\b`)
	paramsRe    = regexp.MustCompile(`(?:^|: )[a-z][a-z0-9_-]* parameters: (?:([A-Za-z_][A-Za-z0-9_.\[\]]*): )?`)
	searchRe    = regexp.MustCompile(`(?:literature|web) search: every search failed|scholar: no sources`)
	replyRe     = regexp.MustCompile(`: invalid reply: `)
	networkRe   = regexp.MustCompile(`connection refused|no such host|dial tcp|connection reset|network is unreachable|TLS handshake|unexpected EOF|server misbehaving`)
	timeoutRe   = regexp.MustCompile(`context deadline exceeded|timed out|Client\.Timeout|i/o timeout`)
	interruptRe = regexp.MustCompile(`^interrupted: `)
	cancelRe    = regexp.MustCompile(`^cancelled\b`)
)

// Of classifies msg, the one-line error of a failed run or call. An empty
// msg is nil.
func Of(msg string) *Failure {
	msg = strings.TrimSpace(msg)
	if msg == "" {
		return nil
	}
	f := &Failure{Kind: Unknown, Detail: msg}
	if m := httpRe.FindStringSubmatch(msg); m != nil {
		f.Provider = m[1]
		f.Status, _ = strconv.Atoi(m[2])
	} else if m := anyHTTPRe.FindStringSubmatch(msg); m != nil {
		f.Status, _ = strconv.Atoi(m[1])
	}
	switch {
	case interruptRe.MatchString(msg):
		f.Kind = Interrupted
	case cancelRe.MatchString(msg):
		f.Kind = Cancelled
	case paramsRe.MatchString(msg):
		f.Kind = Params
		f.Field = paramsRe.FindStringSubmatch(msg)[1]
		f.Provider, f.Status = "", 0
	case breakerRe.MatchString(msg):
		f.Kind = ProviderPaused
		if m := retryAtRe.FindStringSubmatch(msg); m != nil {
			if t, err := time.Parse(time.RFC3339, m[1]); err == nil {
				f.RetryAt = &t
			}
		}
	case searchRe.MatchString(msg):
		f.Kind = SearchUnavailable
	case f.Status == 401 || f.Status == 403:
		f.Kind = Auth
	case f.Status == 429:
		f.Kind = RateLimited
	case f.Status == 408 || f.Status == 504:
		f.Kind = Timeout
	case f.Status >= 500:
		f.Kind = ProviderError
	case f.Status >= 400:
		f.Kind = ProviderRefused
	case replyRe.MatchString(msg):
		f.Kind = ReplyUnusable
	case timeoutRe.MatchString(msg):
		f.Kind = Timeout
	case networkRe.MatchString(msg):
		f.Kind = Network
	}
	return f
}
