package api

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/madspark/madspark/failure"
	"github.com/madspark/madspark/input"
	"github.com/madspark/madspark/structured"
)

// The error types of ErrorBody.
const (
	typeInvalid      = "invalid_request"
	typeValidation   = "validation"
	typeNotFound     = "not_found"
	typeConflict     = "conflict"
	typeRateLimited  = "rate_limited"
	typeUnauthorized = "unauthorized"
	typeTooLarge     = "too_large"
	typeInternal     = "internal"
)

// ErrorBody is the body of every 4xx and 5xx answer.
type ErrorBody struct {
	Error ErrorDetail `json:"error"`
	// Duplicates are the near-identical bookmarks that made a bookmark
	// be refused (409).
	Duplicates *Duplicates `json:"duplicates,omitempty"`
	// Failure, in the error event of an answer's stream and in a failed
	// run's 502, is what kind of failure ended it, in words.
	Failure *failure.Failure `json:"failure,omitempty"`
}

// ErrorDetail says what went wrong, in one line.
type ErrorDetail struct {
	Message string `json:"message"`
	// Type is one of this package's types, or one that package server
	// answers before the API: forbidden (a request from a page of another
	// origin, 403, or for another host, 421) and unsupported_media_type
	// (a body that is not JSON, 415).
	Type string `json:"type" jsonschema:"enum=invalid_request,enum=validation,enum=not_found,enum=conflict,enum=rate_limited,enum=unauthorized,enum=too_large,enum=internal,enum=forbidden,enum=unsupported_media_type"`
	// Field names the field at fault, in dotted form
	// ("params.num_top_candidates"), when there is one.
	Field string `json:"field,omitempty"`
}

// apiError is an error answered with a status and an ErrorBody.
type apiError struct {
	status int
	typ    string
	field  string
	msg    string
	dups   *Duplicates
	// retryAfter, when positive, is sent as Retry-After.
	retryAfter time.Duration
}

func (e *apiError) Error() string { return e.msg }

func errorf(status int, typ, field, format string, a ...any) *apiError {
	return &apiError{status: status, typ: typ, field: field, msg: oneLine(fmt.Sprintf(format, a...))}
}

// invalid is a 400: the request is not well-formed.
func invalid(field, format string, a ...any) *apiError {
	return errorf(http.StatusBadRequest, typeInvalid, field, format, a...)
}

// unprocessable is a 422: a value is out of range or inconsistent.
func unprocessable(field, format string, a ...any) *apiError {
	return errorf(http.StatusUnprocessableEntity, typeValidation, field, format, a...)
}

func notFound(format string, a ...any) *apiError {
	return errorf(http.StatusNotFound, typeNotFound, "", format, a...)
}

func conflict(format string, a ...any) *apiError {
	return errorf(http.StatusConflict, typeConflict, "", format, a...)
}

// runFailed is a run made in the request that failed: a 502 whose message
// says why in words, for the client (package failure).
type runFailed struct {
	runID, model string
	msg          string // the run's recorded error
}

func (e *runFailed) Error() string {
	return "run " + e.runID + " failed with " + e.model + ": " + e.msg
}

// writeError answers err: an *apiError as it says, a failed run as a 502
// in words, anything else as a 500 whose message is logged but not shown.
func (h *Handler) writeError(w http.ResponseWriter, r *http.Request, err error) {
	if rf, ok := errors.AsType[*runFailed](err); ok {
		f := h.failureOf(r, rf.msg)
		writeJSON(w, http.StatusBadGateway, &ErrorBody{Error: ErrorDetail{Message: fmt.Sprintf("run %s (%s) failed: %s", rf.runID, rf.model, f.Line()), Type: typeInternal}, Failure: f})
		return
	}
	ae, ok := errors.AsType[*apiError](err)
	if !ok {
		h.log.Warn("api request failed", "method", r.Method, "path", r.URL.Path, "err", oneLine(err.Error()))
		ae = errorf(http.StatusInternalServerError, typeInternal, "", "internal error; the server log says more")
	}
	if ae.retryAfter > 0 {
		w.Header().Set("Retry-After", strconv.Itoa(int((ae.retryAfter+time.Second-1)/time.Second)))
	}
	writeJSON(w, ae.status, &ErrorBody{Error: ErrorDetail{Message: ae.msg, Type: ae.typ, Field: ae.field}, Duplicates: ae.dups})
}

// writeJSON answers v as JSON with status.
func writeJSON(w http.ResponseWriter, status int, v any) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		status = http.StatusInternalServerError
		buf.Reset()
		buf.WriteString(`{"error":{"message":"could not encode the response","type":"internal"}}` + "\n")
	}
	hd := w.Header()
	hd.Set("Content-Type", "application/json")
	hd.Set("X-Content-Type-Options", "nosniff")
	hd.Set("Cache-Control", "no-store")
	hd.Set("Content-Length", strconv.Itoa(buf.Len()))
	w.WriteHeader(status)
	_, _ = w.Write(buf.Bytes())
}

// decodeBody reads r's JSON body, at most limit bytes, strictly into v: an
// unknown field, a value of the wrong type, invalid JSON, an empty body or
// data after the object is a 400 naming the field when there is one; a
// larger body is a 413.
func decodeBody(w http.ResponseWriter, r *http.Request, limit int64, v any) error {
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, limit))
	if err != nil {
		if _, ok := errors.AsType[*http.MaxBytesError](err); ok {
			return errorf(http.StatusRequestEntityTooLarge, typeTooLarge, "", "request body is larger than %d bytes", limit)
		}
		return invalid("", "could not read the request body")
	}
	return decodeJSON(body, v)
}

// checkText refuses a body that is not valid UTF-8 (which the JSON decoder
// would silently turn into U+FFFD) and, once decoded into v, what
// input.Check refuses (a control character, a number that is not
// finite), naming the field that holds it.
func checkText(body []byte, v any) error {
	if !utf8.Valid(body) {
		return invalid("", "request body is not valid UTF-8")
	}
	if err := input.Check(v); err != nil {
		field := ""
		if ie, ok := errors.AsType[*input.Error](err); ok {
			field = ie.Field
		}
		return invalid(field, "%v", err)
	}
	return nil
}

// decodeJSON decodes body strictly into v (see decodeBody).
func decodeJSON(body []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		if te, ok := errors.AsType[*json.UnmarshalTypeError](err); ok {
			if te.Field == "" {
				return invalid("", "request body must be %s, not %s", structured.KindOf(te.Type), te.Value)
			}
			return invalid(te.Field, "%s must be %s, not %s", te.Field, structured.KindOf(te.Type), te.Value)
		}
		if f, ok := strings.CutPrefix(err.Error(), "json: unknown field "); ok {
			return invalid(strings.Trim(f, `"`), "unknown field %s", f)
		}
		if errors.Is(err, io.EOF) {
			return invalid("", "request body is empty; want a JSON object")
		}
		return invalid("", "request body is not valid JSON: %s", failure.Plain(strings.TrimPrefix(err.Error(), "json: ")))
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return invalid("", "request body has data after the JSON value")
	}
	return checkText(body, v)
}

// queryInt reads the integer query parameter name, def when absent; it
// must lie within lo..hi (a 422 otherwise) and be an integer (a 400).
func queryInt(r *http.Request, name string, def, lo, hi int) (int, error) {
	s := r.URL.Query().Get(name)
	if s == "" {
		return def, nil
	}
	n, err := strconv.Atoi(s)
	if err != nil {
		return 0, invalid(name, "%s must be an integer, not %q", name, s)
	}
	if n < lo || n > hi {
		return 0, unprocessable(name, "%s must be %d..%d, got %d", name, lo, hi, n)
	}
	return n, nil
}

func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }
