// Package failure says what kind of failure a run's error is, and tells
// the people who meet it in plain words what happened, naming the thing,
// and what to do: the provider failing (a server error, a rate limit, a
// paused provider), a refused key, no network, a literature search that
// reached no source, bad parameters, an unusable reply, a timeout, an
// interruption; and, for the errors a command meets before or around a
// run, a file that is not there, JSON that does not parse, a database out
// of reach. It is the one mapping from errors to words: the CLI, the REST
// API, /v1, MCP and the web UI show its Message and Advice, never Go's
// wording (Plain rewrites what is left of it).
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
	// File is a file or directory that is not there, or cannot be read or
	// made.
	File Kind = "file"
	// JSON is text that should be JSON and does not parse as the JSON
	// wanted.
	JSON Kind = "json"
	// Database is the database out of reach, or its file unusable.
	Database Kind = "database"
	// Unknown is any other failure.
	Unknown Kind = "unknown"
)

// Kinds returns every kind, Unknown last.
func Kinds() []Kind {
	return []Kind{ProviderError, RateLimited, ProviderPaused, Auth, ProviderRefused, Network, Timeout, SearchUnavailable,
		Params, ReplyUnusable, Interrupted, Cancelled, File, JSON, Database, Unknown}
}

// Failure is what kind of failure an error is, with the details a message
// for people needs.
type Failure struct {
	Kind Kind `json:"kind" jsonschema:"enum=provider_error,enum=rate_limited,enum=provider_paused,enum=auth,enum=provider_refused,enum=network,enum=timeout,enum=search_unavailable,enum=params,enum=reply_unusable,enum=interrupted,enum=cancelled,enum=file,enum=json,enum=database,enum=unknown"`
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
	// Message says what happened in words, naming the thing ("cannot
	// reach the provider at http://127.0.0.1:1/v1: connection refused"):
	// no Go wording, and the provider's address only for a reader who
	// configured it (Explain).
	Message string `json:"message"`
	// Advice says what to do about it ("is the server running?"); empty
	// when there is nothing to say.
	Advice string `json:"advice,omitempty"`
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
	interruptRe = regexp.MustCompile(`^interrupted\b`)
	cancelRe    = regexp.MustCompile(`^cancelled\b`)
	databaseRe  = regexp.MustCompile(`^open database\b|\b(?:sqlite|postgres): (?:open|migrate)\b|failed to connect to .user=|\bSQLITE_[A-Z]+|database is locked|unable to open database file`)
	fileRe      = regexp.MustCompile(`\b(?:open|stat|lstat|read|mkdir|readlink) .+?: (?:no such file or directory|file does not exist|is a directory|not a directory|permission denied)`)
	jsonRe      = regexp.MustCompile(`invalid character '.+?' (?:looking for|after|in)|unexpected end of JSON input|json: cannot unmarshal`)
)

// Of classifies msg, the one-line error of a failed run or call, and says
// it in words for a reader who knows nothing of the provider (its
// address is not shown). An empty msg is nil.
func Of(msg string) *Failure {
	return Explain(msg, Provider{})
}

// Explain is Of for a reader who knows p: the provider's address is shown
// when p has it, and the advice fits a provider on this machine.
func Explain(msg string, p Provider) *Failure {
	f := classify(msg)
	if f != nil {
		f.explain(p)
	}
	return f
}

// classify is msg's kind and details.
func classify(msg string) *Failure {
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
	case databaseRe.MatchString(msg):
		f.Kind = Database
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
	case fileRe.MatchString(msg):
		f.Kind = File
	case jsonRe.MatchString(msg):
		f.Kind = JSON
	}
	return f
}
