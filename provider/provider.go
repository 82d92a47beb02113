// Package provider chooses and opens the language model a run talks to, from
// the environment, as users of these tools expect:
//
//	MADSPARK_PROVIDER  auto (default) | mock | openai | ollama | gemini | anthropic
//	MADSPARK_MODE      mock forces the mock provider whatever else is set
//	MADSPARK_MODEL     model for any provider (GOOGLE_GENAI_MODEL for Gemini also works)
//	OPENAI_API_KEY, OPENAI_BASE_URL   OpenAI or any OpenAI-compatible server
//	OLLAMA_HOST                       Ollama's OpenAI-compatible endpoint
//	GOOGLE_API_KEY (or GEMINI_API_KEY), ANTHROPIC_API_KEY
//	MADSPARK_MOCK_LATENCY             mock mode only: simulated round trip per call, such as 300ms
//
// With auto, the first provider whose variables are set wins, in the order
// gemini, anthropic, openai, ollama; with none set, the mock provider runs.
package provider

import (
	"cmp"
	"context"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/madspark/madspark/llm"
	"github.com/madspark/madspark/provider/anthropic"
	"github.com/madspark/madspark/provider/gemini"
	"github.com/madspark/madspark/provider/mock"
	"github.com/madspark/madspark/provider/openai"
)

// Settings are the provider-related variables of the environment.
type Settings struct {
	Provider      string
	Mode          string
	Model         string
	OpenAIKey     string
	OpenAIBaseURL string
	OllamaHost    string
	GoogleKey     string
	GoogleModel   string
	// Vertex, GoogleProject and GoogleLocation put Gemini on Vertex AI:
	// GOOGLE_GENAI_USE_VERTEXAI, GOOGLE_CLOUD_PROJECT and
	// GOOGLE_CLOUD_LOCATION (or GOOGLE_CLOUD_REGION), the SDK's variables.
	Vertex                        bool
	GoogleProject, GoogleLocation string
	AnthropicKey                  string
	// Structured is MADSPARK_STRUCTURED_OUTPUT: how an OpenAI-compatible
	// server is given a reply's schema (openai.Config.Structured).
	Structured string
	// OnStructuredFallback, optional, is told once per client when an
	// OpenAI-compatible server refused response_format and schemas go in
	// the prompt instead (openai.Config.OnFallback).
	OnStructuredFallback func(provider, reason string)
	// MockLatency is the simulated round trip of each mock call.
	MockLatency time.Duration
	// mockLatencyErr is why MADSPARK_MOCK_LATENCY could not be parsed.
	mockLatencyErr error
}

// FromEnv reads Settings through getenv.
func FromEnv(getenv func(string) string) Settings {
	google := getenv("GOOGLE_API_KEY")
	if google == "" {
		google = getenv("GEMINI_API_KEY")
	}
	s := Settings{
		Provider:      strings.ToLower(strings.TrimSpace(getenv("MADSPARK_PROVIDER"))),
		Mode:          strings.ToLower(strings.TrimSpace(getenv("MADSPARK_MODE"))),
		Model:         strings.TrimSpace(getenv("MADSPARK_MODEL")),
		OpenAIKey:     strings.TrimSpace(getenv("OPENAI_API_KEY")),
		OpenAIBaseURL: strings.TrimSpace(getenv("OPENAI_BASE_URL")),
		OllamaHost:    strings.TrimSpace(getenv("OLLAMA_HOST")),
		GoogleKey:     strings.TrimSpace(google),
		GoogleModel:   strings.TrimSpace(getenv("GOOGLE_GENAI_MODEL")),
		AnthropicKey:  strings.TrimSpace(getenv("ANTHROPIC_API_KEY")),
		Structured:    strings.ToLower(strings.TrimSpace(getenv("MADSPARK_STRUCTURED_OUTPUT"))),
		GoogleProject: strings.TrimSpace(getenv("GOOGLE_CLOUD_PROJECT")),
	}
	switch strings.ToLower(strings.TrimSpace(getenv("GOOGLE_GENAI_USE_VERTEXAI"))) {
	case "1", "true":
		s.Vertex = true
	}
	s.GoogleLocation = strings.TrimSpace(getenv("GOOGLE_CLOUD_LOCATION"))
	if s.GoogleLocation == "" {
		s.GoogleLocation = strings.TrimSpace(getenv("GOOGLE_CLOUD_REGION"))
	}
	if v := strings.TrimSpace(getenv("MADSPARK_MOCK_LATENCY")); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil || d < 0 || d > time.Minute {
			s.mockLatencyErr = fmt.Errorf("MADSPARK_MOCK_LATENCY must be a duration from 0 to 1m, such as 300ms; got %q", v)
		}
		s.MockLatency = d
	}
	return s
}

// Names lists the accepted values of MADSPARK_PROVIDER.
var Names = []string{"auto", "mock", "openai", "ollama", "gemini", "anthropic"}

// Info describes the chosen provider. It never holds credentials.
type Info struct {
	// Name is one of mock, openai, ollama, gemini, anthropic.
	Name  string
	Model string
	// Mock reports mock mode: deterministic offline data.
	Mock bool
	// Local reports a model served on this machine or network, which costs
	// nothing per token.
	Local bool
	// Reason says why this provider was chosen, for the user.
	Reason string
	// BaseURL is the endpoint the provider's requests go to (empty in
	// mock mode), a password in it masked (MaskPassword).
	BaseURL string
	// Structured is how a reply's schema reaches the model: "native" (the
	// provider's own structured output), or for an OpenAI-compatible
	// server also "prompt" or "both" (MADSPARK_STRUCTURED_OUTPUT); empty
	// in mock mode.
	Structured string
}

// The endpoints of the providers' SDKs when none is configured.
const (
	GeminiBaseURL    = "https://generativelanguage.googleapis.com"
	AnthropicBaseURL = "https://api.anthropic.com"
)

// Mode is "mock" or "live".
func (i Info) Mode() string {
	if i.Mock {
		return "mock"
	}
	return "live"
}

// Choose decides which provider and model the settings select.
func (s Settings) Choose() (Info, error) {
	if s.mockLatencyErr != nil {
		return Info{}, s.mockLatencyErr
	}
	switch s.Structured {
	case "", openai.StructuredNative, openai.StructuredPrompt, openai.StructuredBoth:
	default:
		return Info{}, fmt.Errorf("MADSPARK_STRUCTURED_OUTPUT must be native, prompt or both; got %q", s.Structured)
	}
	switch s.Mode {
	case "", "live", "production", "auto":
	case "mock":
		return Info{Name: mock.Name, Model: mock.Model, Mock: true, Local: true, Reason: "MADSPARK_MODE=mock"}, nil
	default:
		return Info{}, fmt.Errorf("MADSPARK_MODE must be mock or live, got %q", s.Mode)
	}
	name, reason := s.Provider, "MADSPARK_PROVIDER="+s.Provider
	switch name {
	case "", "auto":
		switch {
		case s.GoogleKey != "":
			name, reason = "gemini", "GOOGLE_API_KEY is set"
		case s.Vertex:
			name, reason = "gemini", "GOOGLE_GENAI_USE_VERTEXAI is set"
		case s.AnthropicKey != "":
			name, reason = "anthropic", "ANTHROPIC_API_KEY is set"
		case s.OpenAIKey != "" || s.OpenAIBaseURL != "":
			name, reason = "openai", "OPENAI_API_KEY or OPENAI_BASE_URL is set"
		case s.OllamaHost != "":
			name, reason = "ollama", "OLLAMA_HOST is set"
		default:
			return Info{Name: mock.Name, Model: mock.Model, Mock: true, Local: true, Reason: "no provider credentials found"}, nil
		}
	case "mock":
		return Info{Name: mock.Name, Model: mock.Model, Mock: true, Local: true, Reason: reason}, nil
	case "openai", "ollama", "gemini", "anthropic":
	default:
		return Info{}, fmt.Errorf("MADSPARK_PROVIDER must be one of %s, got %q", strings.Join(Names, ", "), s.Provider)
	}
	info := Info{Name: name, Model: s.Model, Reason: reason, Structured: openai.StructuredNative}
	switch name {
	case "openai":
		if s.OpenAIKey == "" && s.OpenAIBaseURL == "" {
			return Info{}, fmt.Errorf("provider openai needs OPENAI_API_KEY (or OPENAI_BASE_URL for a local server)")
		}
		info.Local = isLocalURL(s.OpenAIBaseURL)
		if info.Model == "" {
			info.Model = openai.DefaultModel
		}
		base := cmp.Or(s.OpenAIBaseURL, openai.DefaultBaseURL)
		info.BaseURL, info.Structured = MaskPassword(base), openai.StructuredMode(s.Structured, base)
	case "ollama":
		info.Local = true
		if info.Model == "" {
			info.Model = "llama3.2"
		}
		base, _ := ollamaBaseURL(s.OllamaHost) // Open reports a bad one
		info.BaseURL, info.Structured = MaskPassword(base), openai.StructuredMode(s.Structured, base)
	case "gemini":
		switch {
		case s.Vertex && s.GoogleKey == "" && (s.GoogleProject == "" || s.GoogleLocation == ""):
			return Info{}, fmt.Errorf("provider gemini on Vertex AI needs GOOGLE_CLOUD_PROJECT and GOOGLE_CLOUD_LOCATION (or GOOGLE_API_KEY)")
		case !s.Vertex && s.GoogleKey == "":
			return Info{}, fmt.Errorf("provider gemini needs GOOGLE_API_KEY (or GOOGLE_GENAI_USE_VERTEXAI=true for Vertex AI)")
		}
		if info.Model == "" {
			info.Model = s.GoogleModel
		}
		if info.Model == "" {
			info.Model = gemini.DefaultModel
		}
		info.BaseURL = GeminiBaseURL
		switch {
		case s.Vertex && s.GoogleLocation != "":
			info.BaseURL = "https://" + s.GoogleLocation + "-aiplatform.googleapis.com"
		case s.Vertex:
			info.BaseURL = "https://aiplatform.googleapis.com"
		}
	case "anthropic":
		if s.AnthropicKey == "" {
			return Info{}, fmt.Errorf("provider anthropic needs ANTHROPIC_API_KEY")
		}
		if info.Model == "" {
			info.Model = anthropic.DefaultModel
		}
		info.BaseURL = AnthropicBaseURL
	}
	return info, nil
}

// Open returns the undecorated client for the chosen provider. responders
// answer the mock provider's agents.
func Open(ctx context.Context, s Settings, responders map[string]mock.Responder) (llm.Client, Info, error) {
	info, err := s.Choose()
	if err != nil {
		return nil, Info{}, err
	}
	switch info.Name {
	case mock.Name:
		return mock.New(responders, mock.WithLatency(s.MockLatency)), info, nil
	case "openai":
		return openai.New(openai.Config{Name: "openai", BaseURL: s.OpenAIBaseURL, APIKey: s.OpenAIKey, Model: info.Model, Structured: s.Structured, HTTPClient: httpClient(), OnFallback: s.fallback("openai")}), info, nil
	case "ollama":
		base, err := ollamaBaseURL(s.OllamaHost)
		if err != nil {
			return nil, Info{}, err
		}
		return openai.New(openai.Config{Name: "ollama", BaseURL: base, APIKey: s.OpenAIKey, Model: info.Model, Structured: s.Structured, HTTPClient: httpClient(), OnFallback: s.fallback("ollama")}), info, nil
	case "gemini":
		c, err := gemini.New(ctx, gemini.Config{APIKey: s.GoogleKey, Model: info.Model,
			Vertex: s.Vertex, Project: s.GoogleProject, Location: s.GoogleLocation, HTTPClient: httpClient()})
		if err != nil {
			return nil, Info{}, fmt.Errorf("gemini: %w", err)
		}
		return c, info, nil
	default: // anthropic
		return anthropic.New(anthropic.Config{APIKey: s.AnthropicKey, Model: info.Model, HTTPClient: httpClient()}), info, nil
	}
}

// Check reports the first setting of req that the provider called name
// (one of Names but auto) has no place for, as its client would refuse it
// before any call: an *llm.Error whose Param names the field (seed and
// verbosity on Anthropic, a reasoning effort without a counterpart, ...).
// It does no I/O, so that a request can be refused before its run starts.
// OpenAI-compatible servers are sent every setting, and the mock takes
// them all.
func Check(name string, req *llm.Request) error {
	switch name {
	case "gemini":
		return gemini.Check(req)
	case "anthropic":
		return anthropic.Check(req)
	}
	return nil
}

// fallback is the OnFallback of an OpenAI-compatible client called name.
func (s Settings) fallback(name string) func(string) {
	if s.OnStructuredFallback == nil {
		return nil
	}
	return func(reason string) { s.OnStructuredFallback(name, reason) }
}

// maxIdlePerHost is how many idle connections to its API a provider's
// client keeps: as many as calls may be in flight to it at once, within
// reason.
const maxIdlePerHost = 256

// httpClient returns the HTTP client of a provider: Go's default
// transport (proxy from the environment, HTTP/2, timeouts), keeping enough
// idle connections to the API for the calls in flight. The default keeps
// two, so that beyond two calls at once every call would open (and, for a
// hosted API, handshake) a connection of its own, which costs CPU and a
// round trip or more before the first token.
func httpClient() *http.Client {
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.MaxIdleConns = maxIdlePerHost
	t.MaxIdleConnsPerHost = maxIdlePerHost
	return &http.Client{Transport: t}
}

// ollamaBaseURL turns OLLAMA_HOST ("host:port", "http://host:port" or
// empty) into the base URL of its OpenAI-compatible API.
func ollamaBaseURL(host string) (string, error) {
	if host == "" {
		host = "127.0.0.1:11434"
	}
	if !strings.Contains(host, "://") {
		host = "http://" + host
	}
	u, err := url.Parse(host)
	if err != nil || u.Host == "" {
		return "", fmt.Errorf("OLLAMA_HOST %q is not a host:port or URL", host)
	}
	if u.Port() == "" {
		u.Host = net.JoinHostPort(u.Hostname(), "11434")
	}
	u.Path = strings.TrimSuffix(u.Path, "/") + "/v1"
	return u.String(), nil
}

// MaskPassword hides the password of a URL such as
// postgres://user:pw@host/db, or https://user:pw@proxy/v1.
func MaskPassword(v string) string {
	u, err := url.Parse(v)
	if err != nil || u.User == nil {
		return v
	}
	if _, ok := u.User.Password(); ok {
		u.User = url.UserPassword(u.User.Username(), "****")
		return strings.Replace(u.String(), "%2A%2A%2A%2A", "****", 1)
	}
	return v
}

// Local reports whether the provider called name (as Response.Provider
// names it) serves its models on this machine or a private network with
// these settings: the mock, Ollama, and an OpenAI-compatible server at a
// local or private address.
func (s Settings) Local(name string) bool {
	switch name {
	case mock.Name, "ollama":
		return true
	case "openai":
		return isLocalURL(s.OpenAIBaseURL)
	}
	return false
}

// isLocalURL reports whether a base URL points at this machine or a private
// network, where a model costs nothing per token.
func isLocalURL(raw string) bool {
	if raw == "" {
		return false
	}
	u, err := url.Parse(raw)
	if err != nil {
		return false
	}
	h := u.Hostname()
	if h == "localhost" || strings.HasSuffix(h, ".local") {
		return true
	}
	ip := net.ParseIP(h)
	return ip != nil && (ip.IsLoopback() || ip.IsPrivate())
}
