package openai

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strings"

	sdk "github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/packages/ssestream"

	"github.com/madspark/madspark/llm"
)

// toError translates an error from the SDK into an *llm.Error. resp is the
// raw HTTP response when there was one. inStream reports that a streamed
// response had started arriving, so that a transport failure is a broken
// stream.
func (c *Client) toError(ctx context.Context, err error, resp *http.Response, inStream bool) error {
	if ctxErr := ctx.Err(); ctxErr != nil {
		// A cancelled call is never retried; a deadline may be a per-call
		// timeout (middleware.Timeout), which is.
		return &llm.Error{
			Provider:  c.name,
			Message:   ctxErr.Error(),
			Retryable: errors.Is(ctxErr, context.DeadlineExceeded),
			Err:       ctxErr,
		}
	}

	var apiErr *sdk.Error
	var streamErr *ssestream.StreamError
	status := 0
	var msg string
	var header http.Header
	switch {
	case errors.As(err, &apiErr):
		status = apiErr.StatusCode
		msg = apiErr.Message
		if r := apiErr.Response; r != nil {
			header = r.Header
			if msg == "" {
				// A body that is not OpenAI's error JSON (a proxy's
				// HTML page, a plain-text error) leaves Message empty;
				// the SDK puts the body back for inspection.
				msg = bodyMessage(r)
			}
		}
	case resp != nil && resp.StatusCode >= 400:
		// An error body the SDK failed to decode: it returns its decoding
		// error and leaves the body in resp.
		status = resp.StatusCode
		header = resp.Header
		msg = bodyMessage(resp)
	case errors.As(err, &streamErr):
		// An {"error": ...} event in the middle of a stream: the server
		// failed while generating.
		msg := "error in stream: " + c.redact(oneLine(errorMessage(streamErr.Event.Data)))
		return &llm.Error{Provider: c.name, Message: msg, Retryable: true, Err: &redactedError{msg: msg, err: err}}
	default:
		// Anything that is not an answer from the API is a transport
		// failure: refused or reset connection, timeout, truncated body.
		msg := c.redact(oneLine(err.Error()))
		if inStream {
			msg = "stream ended early: " + msg
		}
		return &llm.Error{Provider: c.name, Message: msg, Retryable: true, Err: &redactedError{msg: msg, err: err}}
	}

	msg = c.redact(oneLine(msg))
	if msg == "" {
		msg = http.StatusText(status)
	}
	e := &llm.Error{
		Provider:   c.name,
		Status:     status,
		Message:    msg,
		Retryable:  llm.RetryableStatus(status),
		RetryAfter: llm.RetryAfterHeader(header),
		Err:        &redactedError{msg: msg, err: err},
	}
	// OpenAI says explicitly when a retry is or is not worth it.
	switch header.Get("X-Should-Retry") {
	case "true":
		e.Retryable = true
	case "false":
		e.Retryable = false
	}
	return e
}

// bodyMessage returns the error message in the start of resp's body.
func bodyMessage(resp *http.Response) string {
	if resp.Body == nil {
		return ""
	}
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 1024))
	return errorMessage(b)
}

// errorMessage returns error.message from an OpenAI-style error body, or
// the body itself when it is not one.
func errorMessage(body []byte) string {
	var v struct {
		Error json.RawMessage `json:"error"`
	}
	if json.Unmarshal(body, &v) == nil && len(v.Error) > 0 {
		var obj struct {
			Message string `json:"message"`
		}
		if json.Unmarshal(v.Error, &obj) == nil && obj.Message != "" {
			return obj.Message
		}
		var s string
		if json.Unmarshal(v.Error, &s) == nil && s != "" {
			return s
		}
	}
	return string(body)
}

// maxMessage bounds the length of an error message.
const maxMessage = 300

// oneLine collapses white space, newlines included, and shortens s to
// maxMessage bytes.
func oneLine(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) > maxMessage {
		cut := maxMessage
		for cut > 0 && !utf8RuneStart(s[cut]) {
			cut--
		}
		s = s[:cut] + "…"
	}
	return s
}

func utf8RuneStart(b byte) bool { return b&0xC0 != 0x80 }

// redact removes the API key, and anything that looks like one, from s.
func (c *Client) redact(s string) string { return llm.Redact(s, c.apiKey) }

// redactedError carries an SDK error under a message with credentials
// removed, so that printing any error of the chain's head is safe while
// errors.Is and errors.As still reach the SDK's error.
type redactedError struct {
	msg string
	err error
}

func (e *redactedError) Error() string { return e.msg }
func (e *redactedError) Unwrap() error { return e.err }
