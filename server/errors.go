package server

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/madspark/madspark/failure"
	"github.com/madspark/madspark/llm"
	"github.com/madspark/madspark/middleware"
)

// Errors in OpenAI's shape, {"error": {"message", "type", "param",
// "code"}}, with the status and headers that tell a client what to do.

type (
	errorBody struct {
		Error wireError `json:"error"`
	}
	wireError struct {
		Message string  `json:"message"`
		Type    string  `json:"type"`
		Param   *string `json:"param"`
		Code    *string `json:"code"`
	}
)

// requestError is a client error, reported as a 4xx invalid_request_error.
type requestError struct {
	status      int
	code, param string
	msg         string
}

func (e *requestError) Error() string { return e.msg }

func badRequest(param, format string, a ...any) *requestError {
	return &requestError{status: http.StatusBadRequest, param: param, msg: fmt.Sprintf(format, a...)}
}

func modelNotFound(id string, served []string) *requestError {
	return &requestError{status: http.StatusNotFound, code: "model_not_found", param: "model",
		msg: fmt.Sprintf("model %q does not exist; this server has %s", id, strings.Join(served, ", "))}
}

// InvalidRequest marks err, returned by Model.Complete, as the client's
// fault: it is reported as a 400 invalid_request_error.
func InvalidRequest(err error) error {
	return &requestError{status: 400, msg: err.Error()}
}

// panicError is a Model.Complete that panicked.
type panicError struct{ val any }

func (e *panicError) Error() string { return fmt.Sprintf("model panicked: %v", e.val) }

// statusClientClosed is the status logged for a request whose client went
// away before the answer (nginx's convention; never seen by the client).
const statusClientClosed = 499

// classify maps an error to an HTTP status and an OpenAI error object.
func classify(err error) (int, wireError) {
	e := func(status int, typ, code, param, msg string) (int, wireError) {
		we := wireError{Message: msg, Type: typ}
		if code != "" {
			we.Code = &code
		}
		if param != "" {
			we.Param = &param
		}
		return status, we
	}
	if re, ok := errors.AsType[*requestError](err); ok {
		return e(re.status, "invalid_request_error", re.code, re.param, oneLine(re.msg))
	}
	if _, ok := errors.AsType[*panicError](err); ok {
		return e(http.StatusInternalServerError, "server_error", "internal_error", "", "the model failed unexpectedly; see the server log")
	}
	if le, ok := errors.AsType[*llm.Error](err); ok && le.Param != "" {
		// The provider cannot take a field of the request, such as tools.
		return e(http.StatusBadRequest, "invalid_request_error", "", le.Param, failure.Scrub(oneLine(err.Error())))
	}
	// In words (package failure), and without the provider's address:
	// the client did not configure it.
	msg := failure.Scrub(failure.Of(oneLine(err.Error())).Line())
	if isBusy(err) {
		return e(http.StatusTooManyRequests, "rate_limit_error", "rate_limit_exceeded", "", msg)
	}
	// What passes: an open circuit breaker, the provider's rate limit, a
	// provider that did not answer in time.
	if errors.Is(err, middleware.ErrCircuitOpen) {
		return e(http.StatusServiceUnavailable, "server_error", "provider_paused", "", msg)
	}
	if le, ok := errors.AsType[*llm.Error](err); ok && le.Status == http.StatusTooManyRequests {
		return e(http.StatusTooManyRequests, "rate_limit_error", "rate_limit_exceeded", "", msg)
	}
	if timedOut(err) {
		return e(http.StatusServiceUnavailable, "timeout_error", "timeout", "", msg)
	}
	if _, ok := errors.AsType[*llm.Error](err); ok {
		return e(http.StatusBadGateway, "upstream_error", "upstream_error", "", msg)
	}
	return e(http.StatusBadGateway, "server_error", "pipeline_error", "", msg)
}

// timedOut reports whether err is a call that got no answer in time.
func timedOut(err error) bool {
	if errors.Is(err, context.DeadlineExceeded) {
		return true
	}
	ne, ok := errors.AsType[net.Error](err)
	return ok && ne.Timeout()
}

// defaultRetryAfter is the Retry-After of a failure that passes whose
// cause named no delay (a provider's 429 without Retry-After, a timeout).
const defaultRetryAfter = 5 * time.Second

// writeErr answers with err as an OpenAI error. For failures of the model
// it also tells OpenAI SDKs (x-should-retry, Retry-After) whether retrying
// can help, so that a deterministic failure is not run again.
func (s *Server) writeErr(w http.ResponseWriter, r *http.Request, err error) {
	info := infoOf(r.Context())
	status, we := classify(info.given.rename(err))
	switch status {
	case http.StatusTooManyRequests, http.StatusServiceUnavailable:
		// It passes: the client is told when to try again.
		if status != http.StatusTooManyRequests || !isBusy(err) {
			info.err = err
		}
		d := llm.RetryAfterOf(err)
		if d <= 0 {
			d = defaultRetryAfter
		}
		w.Header().Set("Retry-After", fmt.Sprint(int((d+time.Second-1)/time.Second)))
		w.Header().Set("X-Should-Retry", "true")
		writeJSON(w, status, &errorBody{Error: we})
		return
	}
	if status >= 500 {
		info.err = err
		if r.Context().Err() != nil && errors.Is(err, context.Canceled) {
			// The client went away; nobody reads this answer.
			w.WriteHeader(statusClientClosed)
			return
		}
		if !llm.IsRetryable(err) {
			w.Header().Set("X-Should-Retry", "false")
		} else {
			retryAfterHeader(w.Header(), err)
		}
	}
	writeJSON(w, status, &errorBody{Error: we})
}

// writeError answers with an OpenAI error object.
func writeError(w http.ResponseWriter, status int, code, msg string) {
	_, we := classify(&requestError{status: status, code: code, msg: msg})
	writeJSON(w, status, &errorBody{Error: we})
}

// retryAfterHeader sets Retry-After from err's hint, in whole seconds.
func retryAfterHeader(h http.Header, err error) {
	if d := llm.RetryAfterOf(err); d > 0 {
		h.Set("Retry-After", fmt.Sprint(int((d+time.Second-1)/time.Second)))
	}
}

// isBusy reports whether err is a capacity refusal.
func isBusy(err error) bool { return errors.Is(err, middleware.ErrBusy) }

func writeJSON(w http.ResponseWriter, status int, v any) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	var body []byte
	if err := enc.Encode(v); err == nil {
		body = buf.Bytes()
	} else {
		status = http.StatusInternalServerError
		body = []byte(`{"error":{"message":"could not encode the response","type":"server_error","param":null,"code":null}}` + "\n")
	}
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Content-Length", strconv.Itoa(len(body)))
	w.WriteHeader(status)
	_, _ = w.Write(body)
}

func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }
