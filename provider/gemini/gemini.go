// Package gemini is the Google Gemini provider: an llm.Client that talks to the
// Gemini API (not Vertex AI) through google.golang.org/genai.
//
// The client makes exactly one HTTP request per Generate call: the SDK's own
// retries and its automatic continuation are switched off, because retrying
// is the job of the retry middleware and every request is billed.
package gemini

import (
	"cmp"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"strings"
	"sync"

	"cloud.google.com/go/auth"
	"cloud.google.com/go/auth/credentials"
	"google.golang.org/genai"

	"github.com/madspark/madspark/llm"
)

// Name is the provider name reported in responses and errors.
const Name = "gemini"

// DefaultModel is the model used when neither Config.Model nor
// llm.Request.Model names one.
const DefaultModel = "gemini-2.5-flash"

// Config configures a Client.
type Config struct {
	// APIKey is the Gemini API key. It is required for the Gemini API; on
	// Vertex AI it is optional (express mode). The environment is not
	// consulted.
	APIKey string
	// Vertex selects the Vertex AI backend instead of the Gemini API, in
	// Project and Location, authenticated with Credentials or, when nil
	// and there is no APIKey, Google's application default credentials.
	Vertex            bool
	Project, Location string
	Credentials       *auth.Credentials
	// Model is the default model; DefaultModel when empty.
	Model string
	// BaseURL overrides the API endpoint, such as an httptest server's URL
	// in tests. Empty means the SDK's default.
	BaseURL string
	// HTTPClient is the HTTP client to use; a new one when nil. Its
	// Transport is wrapped, not modified.
	HTTPClient *http.Client
}

// Client is a Gemini model. It is safe for concurrent use.
type Client struct {
	sdk    *genai.Client
	model  string
	apiKey string
}

// New returns a Client for the Gemini API backend. It does no network I/O.
func New(ctx context.Context, cfg Config) (*Client, error) {
	backend := genai.BackendGeminiAPI
	switch {
	case cfg.Vertex:
		backend = genai.BackendVertexAI
		if cfg.APIKey == "" && (cfg.Project == "" || cfg.Location == "") {
			return nil, &llm.Error{Provider: Name, Message: "config: Vertex AI needs a project and a location, or an API key"}
		}
	case cfg.APIKey == "":
		return nil, &llm.Error{Provider: Name, Message: "config: APIKey is required"}
	}
	model := cfg.Model
	if model == "" {
		model = DefaultModel
	}
	base := cfg.HTTPClient
	if base == nil {
		base = &http.Client{}
	}
	hc := *base
	hc.Transport = &captureTransport{next: base.Transport}
	if cfg.Vertex && cfg.APIKey == "" {
		// The SDK authenticates only the HTTP client it makes itself.
		creds := cfg.Credentials
		if creds == nil {
			var err error
			creds, err = credentials.DetectDefault(&credentials.DetectOptions{Scopes: []string{"https://www.googleapis.com/auth/cloud-platform"}})
			if err != nil {
				return nil, &llm.Error{Provider: Name, Message: "config: Vertex AI credentials: " + err.Error()}
			}
		}
		hc.Transport = &bearerTransport{creds: creds, next: hc.Transport}
	}

	sdk, err := genai.NewClient(ctx, &genai.ClientConfig{
		APIKey:      cfg.APIKey,
		Backend:     backend,
		Project:     cfg.Project,
		Location:    cfg.Location,
		Credentials: cfg.Credentials,
		HTTPClient:  &hc,
		HTTPOptions: genai.HTTPOptions{
			BaseURL: cfg.BaseURL,
			// genai only retries when RetryOptions is set; say "one attempt"
			// explicitly so that a change of the SDK's default cannot add
			// hidden retries under the retry middleware.
			RetryOptions: &genai.HTTPRetryOptions{Attempts: genai.Ptr[int32](1)},
		},
	})
	if err != nil {
		// genai formats its ClientConfig, key included, into some errors.
		return nil, &llm.Error{Provider: Name, Message: "config: " + llm.Redact(err.Error(), cfg.APIKey)}
	}
	return &Client{sdk: sdk, model: model, apiKey: cfg.APIKey}, nil
}

// Generate sends req to Gemini. With req.OnDelta set it streams over SSE
// (streamGenerateContent?alt=sse). Every failure is an *llm.Error.
func (c *Client) Generate(ctx context.Context, req *llm.Request) (*llm.Response, error) {
	model := req.Model
	if model == "" {
		model = c.model
	}
	contents, cfg, err := c.build(req)
	if err != nil {
		return nil, err
	}
	w := llm.WireOf(req)
	if cfg.ResponseJsonSchema != nil {
		w.ResponseFormat, _ = json.Marshal(map[string]any{"responseMimeType": cfg.ResponseMIMEType, "responseJsonSchema": cfg.ResponseJsonSchema})
	}
	llm.SendingWire(ctx, w)
	info := &callInfo{}
	ctx = context.WithValue(ctx, callInfoKey{}, info)

	if req.OnDelta != nil {
		return c.stream(ctx, model, contents, cfg, req.OnDelta, info)
	}
	resp, err := c.sdk.Models.GenerateContent(ctx, model, contents, cfg)
	if err != nil {
		return nil, c.toError(ctx, err, info, false)
	}
	var r result
	r.add(resp, nil)
	return r.finish(model)
}

// build translates req into genai's contents and config.
func (c *Client) build(req *llm.Request) ([]*genai.Content, *genai.GenerateContentConfig, error) {
	contents, err := contentsOf(req.Messages)
	if err != nil {
		return nil, nil, err
	}
	temp := float32(req.Temperature)
	cfg := &genai.GenerateContentConfig{
		Temperature: &temp,
		// One request per call: a CONTINUATION finish reason is reported
		// rather than followed up with more (billed) requests, and a broken
		// stream is returned to the retry middleware instead of resumed.
		AutomaticContinuation: genai.Ptr(false),
	}
	if req.System != "" {
		cfg.SystemInstruction = &genai.Content{Role: string(genai.RoleUser), Parts: []*genai.Part{{Text: req.System}}}
	}
	if req.MaxTokens > 0 {
		cfg.MaxOutputTokens = int32(req.MaxTokens)
	}
	if req.TopP != nil {
		cfg.TopP = genai.Ptr(float32(*req.TopP))
	}
	cfg.StopSequences = req.Stop
	if req.Seed != nil {
		if *req.Seed < math.MinInt32 || *req.Seed > math.MaxInt32 {
			return nil, nil, &llm.Error{Provider: Name, Message: fmt.Sprintf("seed %d: Gemini takes a 32-bit seed", *req.Seed)}
		}
		cfg.Seed = genai.Ptr(int32(*req.Seed))
	}
	if req.Schema != nil {
		var doc any
		if err := json.Unmarshal(req.Schema.JSON, &doc); err != nil {
			return nil, nil, &llm.Error{Provider: Name, Message: fmt.Sprintf("schema %q: %v", req.Schema.Name, err), Err: err}
		}
		cfg.ResponseMIMEType = "application/json"
		// ResponseJsonSchema takes a JSON Schema document as is;
		// ResponseSchema would need genai's OpenAPI-subset Schema type.
		cfg.ResponseJsonSchema = doc
	}
	if err := tools(cfg, req); err != nil {
		return nil, nil, err
	}
	return contents, cfg, nil
}

// contentsOf translates a conversation: an assistant's tool calls are
// functionCall parts after its text, and the results of calls, which
// follow them, functionResponse parts of one user content, each named
// after its call's function (Gemini asks for the name).
func contentsOf(msgs []llm.Message) ([]*genai.Content, error) {
	out := make([]*genai.Content, 0, len(msgs))
	names := map[string]string{} // call ID → function
	for i, m := range msgs {
		switch m.Role {
		case llm.RoleUser:
			out = append(out, &genai.Content{Role: string(genai.RoleUser), Parts: []*genai.Part{{Text: m.Content}}})
		case llm.RoleAssistant:
			c := &genai.Content{Role: string(genai.RoleModel)}
			if m.Content != "" || len(m.ToolCalls) == 0 {
				c.Parts = append(c.Parts, &genai.Part{Text: m.Content})
			}
			for _, tc := range m.ToolCalls {
				var args map[string]any
				if err := json.Unmarshal([]byte(cmp.Or(tc.Arguments, "{}")), &args); err != nil {
					return nil, &llm.Error{Provider: Name, Param: "tools",
						Message: fmt.Sprintf("message %d: the arguments of tool call %s are not a JSON object", i, tc.ID)}
				}
				names[tc.ID] = tc.Name
				c.Parts = append(c.Parts, &genai.Part{FunctionCall: &genai.FunctionCall{ID: tc.ID, Name: tc.Name, Args: args}})
			}
			out = append(out, c)
		case llm.RoleTool:
			name, ok := names[m.ToolCallID]
			if !ok {
				return nil, &llm.Error{Provider: Name, Param: "tools", Message: fmt.Sprintf("message %d answers %q, which no earlier message called", i, m.ToolCallID)}
			}
			part := &genai.Part{FunctionResponse: &genai.FunctionResponse{ID: m.ToolCallID, Name: name, Response: map[string]any{"output": m.Content}}}
			if n := len(out); n > 0 && i > 0 && msgs[i-1].Role == llm.RoleTool {
				out[n-1].Parts = append(out[n-1].Parts, part)
			} else {
				out = append(out, &genai.Content{Role: string(genai.RoleUser), Parts: []*genai.Part{part}})
			}
		default:
			return nil, &llm.Error{Provider: Name, Message: fmt.Sprintf("message %d: unknown role %q", i, m.Role)}
		}
	}
	return out, nil
}

// tools puts req's tools on cfg as function declarations (their
// parameters' JSON Schema as given) and its tool choice as the function
// calling mode: AUTO, NONE, or ANY (with the one function named, when a
// choice names one). Gemini has no setting for parallel_tool_calls false,
// which is refused rather than ignored.
func tools(cfg *genai.GenerateContentConfig, req *llm.Request) error {
	if err := llm.CheckTools(req.Tools, req.ToolChoice); err != nil {
		return &llm.Error{Provider: Name, Message: err.Error(), Param: "tools"}
	}
	if len(req.Tools) == 0 {
		return nil
	}
	if req.ParallelToolCalls != nil && !*req.ParallelToolCalls {
		return &llm.Error{Provider: Name, Param: "parallel_tool_calls",
			Message: "Gemini cannot be held to one tool call at a time; leave parallel_tool_calls unset or true"}
	}
	decls := make([]*genai.FunctionDeclaration, 0, len(req.Tools))
	for _, tool := range req.Tools {
		d := &genai.FunctionDeclaration{Name: tool.Name, Description: tool.Description}
		if len(tool.Parameters) > 0 {
			var doc any
			if err := json.Unmarshal(tool.Parameters, &doc); err != nil {
				return &llm.Error{Provider: Name, Param: "tools", Message: fmt.Sprintf("tool %s: the parameters are not JSON", tool.Name)}
			}
			d.ParametersJsonSchema = doc
		}
		decls = append(decls, d)
	}
	cfg.Tools = []*genai.Tool{{FunctionDeclarations: decls}}
	if ch := req.ToolChoice; ch != nil {
		fc := &genai.FunctionCallingConfig{Mode: genai.FunctionCallingConfigModeAuto}
		switch ch.Mode {
		case llm.ToolNone:
			fc.Mode = genai.FunctionCallingConfigModeNone
		case llm.ToolRequired:
			fc.Mode = genai.FunctionCallingConfigModeAny
			if ch.Name != "" {
				fc.AllowedFunctionNames = []string{ch.Name}
			}
		}
		cfg.ToolConfig = &genai.ToolConfig{FunctionCallingConfig: fc}
	}
	return nil
}

// stream runs a streaming call, passing text to onDelta as it arrives.
func (c *Client) stream(ctx context.Context, model string, contents []*genai.Content, cfg *genai.GenerateContentConfig, onDelta func(string), info *callInfo) (*llm.Response, error) {
	var r result
	for chunk, err := range c.sdk.Models.GenerateContentStream(ctx, model, contents, cfg) {
		if err != nil {
			return nil, c.toError(ctx, err, info, r.chunks > 0)
		}
		r.add(chunk, onDelta)
	}
	if r.finishReason == "" && r.blockReason == "" {
		if ctx.Err() != nil {
			return nil, c.toError(ctx, ctx.Err(), info, true)
		}
		// The body ended cleanly but the model never said it was done.
		return nil, &llm.Error{
			Provider:  Name,
			Message:   fmt.Sprintf("stream ended before the model finished (%d chunks received)", r.chunks),
			Retryable: true,
			Err:       io.ErrUnexpectedEOF,
		}
	}
	return r.finish(model)
}

// result accumulates one reply from a response or a stream of chunks.
type result struct {
	text         strings.Builder
	calls        []llm.ToolCall
	chunks       int
	finishReason genai.FinishReason
	finishMsg    string
	blockReason  genai.BlockedReason
	model        string
	usage        *genai.GenerateContentResponseUsageMetadata
}

// add takes in one response (or stream chunk), sending its text to onDelta
// when that is not nil.
func (r *result) add(resp *genai.GenerateContentResponse, onDelta func(string)) {
	if resp == nil {
		return
	}
	r.chunks++
	if resp.ModelVersion != "" {
		r.model = resp.ModelVersion
	}
	if resp.UsageMetadata != nil {
		// In a stream each chunk carries the running total.
		r.usage = resp.UsageMetadata
	}
	if pf := resp.PromptFeedback; pf != nil && pf.BlockReason != "" {
		r.blockReason = pf.BlockReason
	}
	if len(resp.Candidates) == 0 || resp.Candidates[0] == nil {
		return
	}
	cand := resp.Candidates[0]
	if cand.FinishReason != "" && cand.FinishReason != genai.FinishReasonUnspecified {
		r.finishReason = cand.FinishReason
		r.finishMsg = cand.FinishMessage
	}
	if cand.Content == nil {
		return
	}
	for _, p := range cand.Content.Parts {
		if p != nil && p.FunctionCall != nil {
			fc := p.FunctionCall
			args, _ := json.Marshal(fc.Args)
			if fc.Args == nil {
				args = []byte("{}")
			}
			// Gemini may give no call ID: the call gets one, so that its
			// result can name it.
			id := fc.ID
			if id == "" {
				id = "call_" + randomID()
			}
			r.calls = append(r.calls, llm.ToolCall{ID: id, Name: fc.Name, Arguments: string(args)})
			continue
		}
		if p == nil || p.Thought || p.Text == "" {
			continue
		}
		r.text.WriteString(p.Text)
		if onDelta != nil {
			onDelta(p.Text)
		}
	}
}

// blockedFinish lists the finish reasons that mean the reply was withheld
// or cut by a filter; such a reply is an error even when some text came.
var blockedFinish = map[genai.FinishReason]bool{
	genai.FinishReasonSafety:            true,
	genai.FinishReasonRecitation:        true,
	genai.FinishReasonBlocklist:         true,
	genai.FinishReasonProhibitedContent: true,
	genai.FinishReasonSPII:              true,
	genai.FinishReasonImageSafety:       true,
}

// finish turns the accumulated reply into a Response, or an error when the
// prompt or the reply was blocked or the reply is empty.
func (r *result) finish(model string) (*llm.Response, error) {
	if r.blockReason != "" {
		return nil, &llm.Error{Provider: Name, Message: "prompt blocked: block reason " + strings.ToLower(string(r.blockReason))}
	}
	fr := strings.ToLower(string(r.finishReason))
	if blockedFinish[r.finishReason] || (r.text.Len() == 0 && len(r.calls) == 0) {
		what := "empty reply"
		if blockedFinish[r.finishReason] {
			what = "reply blocked"
		}
		if fr == "" {
			fr = "none"
		}
		msg := what + ": finish reason " + fr
		if r.finishMsg != "" {
			msg += " (" + r.finishMsg + ")"
		}
		return nil, &llm.Error{Provider: Name, Message: msg}
	}
	if r.model != "" {
		model = r.model
	}
	usage := llm.Usage{LLMCalls: 1}
	if u := r.usage; u != nil {
		usage.InputTokens = int(u.PromptTokenCount)
		// Thinking tokens are billed as output.
		usage.OutputTokens = int(u.CandidatesTokenCount) + int(u.ThoughtsTokenCount)
	}
	if len(r.calls) > 0 {
		fr = llm.FinishToolCalls
	}
	return &llm.Response{
		Text:         r.text.String(),
		ToolCalls:    r.calls,
		Provider:     Name,
		Model:        model,
		FinishReason: fr,
		Usage:        usage,
	}, nil
}

// callInfoKey is the context key of a call's *callInfo.
type callInfoKey struct{}

// callInfo records what the transport saw of the last HTTP response of one
// Generate call; genai's APIError does not carry the response headers.
type callInfo struct {
	mu         sync.Mutex
	status     int
	retryAfter string
}

func (ci *callInfo) get() (status int, retryAfter string) {
	ci.mu.Lock()
	defer ci.mu.Unlock()
	return ci.status, ci.retryAfter
}

// captureTransport records the status and Retry-After header of responses
// into the request context's *callInfo.
type captureTransport struct {
	next http.RoundTripper
}

// RoundTrip implements http.RoundTripper.
func (t *captureTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	next := t.next
	if next == nil {
		next = http.DefaultTransport
	}
	resp, err := next.RoundTrip(req)
	if resp != nil {
		if ci, ok := req.Context().Value(callInfoKey{}).(*callInfo); ok {
			ci.mu.Lock()
			ci.status = resp.StatusCode
			ci.retryAfter = resp.Header.Get("Retry-After")
			ci.mu.Unlock()
		}
	}
	return resp, err
}

// toError translates an error from genai into an *llm.Error. inStream
// reports that the response had started arriving, so a failure that is not
// an API error is a broken stream.
func (c *Client) toError(ctx context.Context, err error, info *callInfo, inStream bool) error {
	if ctxErr := ctx.Err(); ctxErr != nil {
		// A cancelled call is never retried; a deadline may be a per-call
		// timeout (middleware.Timeout), which is.
		return &llm.Error{
			Provider:  Name,
			Message:   ctxErr.Error(),
			Retryable: errors.Is(ctxErr, context.DeadlineExceeded),
			Err:       ctxErr,
		}
	}
	var apiErr genai.APIError
	var apiErrPtr *genai.APIError
	switch {
	case errors.As(err, &apiErr):
	case errors.As(err, &apiErrPtr) && apiErrPtr != nil:
		apiErr = *apiErrPtr
	default:
		msg := llm.Redact(err.Error(), c.apiKey)
		if inStream {
			msg = "stream broken: " + msg
		}
		return &llm.Error{
			Provider: Name,
			Message:  msg,
			// Anything that is not an answer from the API is a transport
			// failure: refused or reset connection, timeout, truncated body.
			Retryable: true,
			Err:       &redactedError{msg: msg, err: err},
		}
	}

	status := apiErr.Code
	if status == 0 {
		status = statusOfCode(apiErr.Status)
	}
	msg := apiErr.Message
	if msg == "" {
		msg = apiErr.Status
	}
	if msg == "" {
		msg = http.StatusText(status)
	}
	msg = llm.Redact(msg, c.apiKey)
	// Keep the APIError for errors.As, with the key scrubbed from it too.
	apiErr.Message = llm.Redact(apiErr.Message, c.apiKey)
	if inStream {
		msg = "error in stream: " + msg
	}
	e := &llm.Error{
		Provider:  Name,
		Status:    status,
		Message:   msg,
		Retryable: llm.RetryableStatus(status),
		Err:       apiErr,
	}
	if st, ra := info.get(); st == status && ra != "" {
		e.RetryAfter = llm.ParseRetryAfter(ra)
	}
	if e.RetryAfter == 0 {
		e.RetryAfter = retryInfoDelay(apiErr.Details)
	}
	return e
}

// statusOfCode maps a google.rpc.Code name, as found in error bodies without
// a numeric code, to its HTTP status.
func statusOfCode(code string) int {
	switch code {
	case "INVALID_ARGUMENT", "FAILED_PRECONDITION", "OUT_OF_RANGE":
		return http.StatusBadRequest
	case "UNAUTHENTICATED":
		return http.StatusUnauthorized
	case "PERMISSION_DENIED":
		return http.StatusForbidden
	case "NOT_FOUND":
		return http.StatusNotFound
	case "ABORTED", "ALREADY_EXISTS":
		return http.StatusConflict
	case "RESOURCE_EXHAUSTED":
		return http.StatusTooManyRequests
	case "CANCELLED":
		return 499
	case "UNIMPLEMENTED":
		return http.StatusNotImplemented
	case "UNAVAILABLE":
		return http.StatusServiceUnavailable
	case "DEADLINE_EXCEEDED":
		return http.StatusGatewayTimeout
	case "INTERNAL", "UNKNOWN", "DATA_LOSS":
		return http.StatusInternalServerError
	}
	return 0
}

// redactedError carries an SDK error under a message with credentials
// removed, so that printing any error in the chain's head is safe.
type redactedError struct {
	msg string
	err error
}

func (e *redactedError) Error() string    { return e.msg }
func (e *redactedError) GoString() string { return fmt.Sprintf("%q", e.msg) }
func (e *redactedError) Unwrap() error    { return e.err }

// bearerTransport adds an OAuth access token from creds to each request.
type bearerTransport struct {
	creds *auth.Credentials
	next  http.RoundTripper
}

func (t *bearerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	tok, err := t.creds.Token(r.Context())
	if err != nil {
		return nil, fmt.Errorf("vertex ai credentials: %w", err)
	}
	r = r.Clone(r.Context())
	typ := tok.Type
	if typ == "" {
		typ = "Bearer"
	}
	r.Header.Set("Authorization", typ+" "+tok.Value)
	next := t.next
	if next == nil {
		next = http.DefaultTransport
	}
	return next.RoundTrip(r)
}

// randomID is 12 random bytes in hex.
func randomID() string {
	var b [12]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}
