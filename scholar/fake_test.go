package scholar

import (
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/madspark/madspark/llm"
)

// reply is one canned answer of a fake API.
type reply struct {
	status      int
	header      http.Header
	contentType string
	body        string
}

// fakeAPI is an in-process stand-in for a scholarly API. check validates
// every request as the real service expects it; replies are served in
// order, the last one repeating.
type fakeAPI struct {
	t     *testing.T
	check func(t *testing.T, r *http.Request)

	mu       sync.Mutex
	replies  []reply
	requests []*http.Request
	srv      *httptest.Server
}

func newFakeAPI(t *testing.T, check func(*testing.T, *http.Request), replies ...reply) *fakeAPI {
	f := &fakeAPI{t: t, check: check, replies: replies}
	f.srv = httptest.NewServer(http.HandlerFunc(f.serve))
	t.Cleanup(f.srv.Close)
	return f
}

func (f *fakeAPI) serve(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	f.requests = append(f.requests, r.Clone(r.Context()))
	rep := f.replies[0]
	if len(f.replies) > 1 {
		f.replies = f.replies[1:]
	}
	f.mu.Unlock()
	if f.check != nil {
		f.check(f.t, r)
	}
	for k, v := range rep.header {
		w.Header()[k] = v
	}
	ct := rep.contentType
	if ct == "" {
		ct = "application/json"
	}
	w.Header().Set("Content-Type", ct)
	status := rep.status
	if status == 0 {
		status = http.StatusOK
	}
	w.WriteHeader(status)
	io.WriteString(w, rep.body)
}

func (f *fakeAPI) calls() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.requests)
}

func (f *fakeAPI) request(i int) *http.Request {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.requests[i]
}

// checkLLMError asserts err is an *llm.Error from provider with the given
// status and retryability, whose message contains want and no secret.
func checkLLMError(t *testing.T, err error, provider string, status int, retryable bool, want string, secrets ...string) *llm.Error {
	t.Helper()
	var e *llm.Error
	if !errors.As(err, &e) {
		t.Fatalf("error %v (%T), want *llm.Error", err, err)
	}
	if e.Provider != provider || e.Status != status || e.Retryable != retryable {
		t.Errorf("error %+v: want provider %s, status %d, retryable %v", e, provider, status, retryable)
	}
	if !strings.Contains(err.Error(), want) {
		t.Errorf("error %q does not contain %q", err, want)
	}
	for _, s := range secrets {
		for x := error(e); x != nil; x = errors.Unwrap(x) {
			if strings.Contains(x.Error(), s) {
				t.Errorf("error %q reveals a secret", x)
			}
		}
	}
	return e
}
