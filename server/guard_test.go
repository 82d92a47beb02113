package server

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// guarded is a server without a token, with a state-changing route and a
// page outside /v1 besides its own routes.
func guarded(t *testing.T, cfg Config) (*httptest.Server, *fakeModel, *int) {
	t.Helper()
	m := newFake("madspark-debate", "ok")
	cfg.Models = []Model{m}
	s, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	posted := new(int)
	s.Mux().HandleFunc("POST /api/things", func(w http.ResponseWriter, _ *http.Request) {
		*posted++
		w.WriteHeader(http.StatusAccepted)
	})
	s.Mux().HandleFunc("GET /", func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, "<html></html>") })
	srv := httptest.NewServer(s.Handler())
	t.Cleanup(srv.Close)
	return srv, m, posted
}

const chatBody = `{"model":"madspark-debate","messages":[{"role":"user","content":"hi"}]}`

// send sends a request with the given headers ("Host" sets the Host
// header) and returns its status and body.
func send(t *testing.T, method, url, body string, header ...string) (int, string) {
	t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, url, rd)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i+1 < len(header); i += 2 {
		if header[i] == "Host" {
			req.Host = header[i+1]
			continue
		}
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	return resp.StatusCode, string(b)
}

// errType returns the type of a JSON error body, and its code when it has
// one (OpenAI's shape).
func errType(t *testing.T, body string) (typ, code string) {
	t.Helper()
	e, ok := jsonMap(t, body)["error"].(map[string]any)
	if !ok {
		t.Fatalf("not a JSON error: %s", body)
	}
	msg, _ := e["message"].(string)
	if msg == "" || strings.Contains(msg, "\n") {
		t.Fatalf("not a one-line message: %s", body)
	}
	typ, _ = e["type"].(string)
	code, _ = e["code"].(string)
	return typ, code
}

// TestCrossOriginRefused: a state-changing request a page of another
// origin sends is refused with a JSON 403 before any work, whatever its
// content type; the server's own origin, a configured one, and clients
// that are not browsers pass; reads are never refused.
func TestCrossOriginRefused(t *testing.T) {
	srv, m, posted := guarded(t, Config{CORSOrigins: []string{"https://ui.example.org"}})
	chat := srv.URL + "/v1/chat/completions"
	for _, tt := range []struct {
		name   string
		header []string
	}{
		{"foreign origin, text/plain", []string{"Origin", "https://evil.example", "Content-Type", "text/plain"}},
		{"foreign origin, form", []string{"Origin", "https://evil.example", "Content-Type", "application/x-www-form-urlencoded"}},
		{"foreign origin, JSON", []string{"Origin", "https://evil.example", "Content-Type", "application/json"}},
		{"null origin", []string{"Origin", "null", "Content-Type", "application/json"}},
		{"cross-site fetch", []string{"Sec-Fetch-Site", "cross-site", "Content-Type", "application/json"}},
		{"same-site fetch of another origin", []string{"Sec-Fetch-Site", "same-site", "Origin", "http://localhost:5173", "Content-Type", "application/json"}},
	} {
		status, body := send(t, http.MethodPost, chat, chatBody, tt.header...)
		if typ, code := errType(t, body); status != 403 || typ != "invalid_request_error" || code != "cross_origin_refused" {
			t.Errorf("/v1, %s: %d %s", tt.name, status, body)
		}
		status, body = send(t, http.MethodPost, srv.URL+"/api/things", `{}`, tt.header...)
		if typ, _ := errType(t, body); status != 403 || typ != "forbidden" || !strings.Contains(body, "--allowed-origins") {
			t.Errorf("/api, %s: %d %s", tt.name, status, body)
		}
	}
	if m.callCount() != 0 || *posted != 0 {
		t.Fatalf("refused requests did work: %d model calls, %d posts", m.callCount(), *posted)
	}
	for _, tt := range []struct {
		name   string
		header []string
	}{
		{"own origin", []string{"Origin", srv.URL, "Sec-Fetch-Site", "same-origin"}},
		{"own origin, no Sec-Fetch-Site", []string{"Origin", srv.URL}},
		{"configured origin", []string{"Origin", "https://ui.example.org", "Sec-Fetch-Site", "cross-site"}},
		{"not a browser", nil},
		{"typed in the address bar", []string{"Sec-Fetch-Site", "none"}},
	} {
		h := append([]string{"Content-Type", "application/json"}, tt.header...)
		if status, body := send(t, http.MethodPost, chat, chatBody, h...); status != 200 {
			t.Errorf("%s: %d %s", tt.name, status, body)
		}
	}
	if status, body := send(t, http.MethodGet, srv.URL+"/v1/models", "", "Origin", "https://evil.example", "Sec-Fetch-Site", "cross-site"); status != 200 {
		t.Errorf("a cross-origin read is refused: %d %s", status, body)
	}
}

// TestJSONRequired: a body that is not declared as JSON is refused with
// a JSON 415 before any work, on /v1 and elsewhere; a bodiless POST needs
// no content type.
func TestJSONRequired(t *testing.T) {
	srv, m, posted := guarded(t, Config{})
	for _, ct := range []string{"", "text/plain", "application/x-www-form-urlencoded", "multipart/form-data; boundary=x", "application/jsonx", "application/json; charset"} {
		h := []string{}
		if ct != "" {
			h = []string{"Content-Type", ct}
		}
		status, body := send(t, http.MethodPost, srv.URL+"/v1/chat/completions", chatBody, h...)
		if _, code := errType(t, body); status != 415 || code != "unsupported_media_type" {
			t.Errorf("/v1, %q: %d %s", ct, status, body)
		}
		status, body = send(t, http.MethodPost, srv.URL+"/api/things", `{}`, h...)
		if typ, _ := errType(t, body); status != 415 || typ != "unsupported_media_type" {
			t.Errorf("/api, %q: %d %s", ct, status, body)
		}
	}
	if m.callCount() != 0 || *posted != 0 {
		t.Fatalf("refused requests did work: %d model calls, %d posts", m.callCount(), *posted)
	}
	if status, _ := send(t, http.MethodPost, srv.URL+"/api/things", ""); status != 202 {
		t.Errorf("a bodiless POST: %d", status)
	}
	if status, body := send(t, http.MethodPost, srv.URL+"/v1/chat/completions", chatBody, "Content-Type", "Application/JSON; charset=utf-8"); status != 200 {
		t.Errorf("JSON with a charset: %d %s", status, body)
	}
	// A route that does not exist stays a 405 (GET / matches the path)
	// whatever the body.
	if status, _ := send(t, http.MethodPost, srv.URL+"/api/nothing", "x", "Content-Type", "text/plain"); status != 405 {
		t.Errorf("unknown route: %d", status)
	}
}

// TestHostChecked: without a token, a request whose Host is not the bound
// address, localhost, a loopback address or a configured name is refused
// with 421 on every route, the UI's page and /health included; with a
// token nothing is checked.
func TestHostChecked(t *testing.T) {
	srv, m, _ := guarded(t, Config{Addr: "127.0.0.1:8080", AllowedHosts: []string{"Madspark.LAN"}})
	for _, path := range []string{"/", "/health", "/v1/models", "/metrics", "/api/runs"} {
		for _, host := range []string{"evil.example", "evil.example:8080", "127.0.0.1.evil.example", "localhost.evil.example", "10.0.0.1"} {
			status, body := send(t, http.MethodGet, srv.URL+path, "", "Host", host)
			if typ, _ := errType(t, body); status != 421 || (!strings.HasPrefix(path, "/v1") && typ != "forbidden") {
				t.Errorf("%s with Host %s: %d %s", path, host, status, body)
			}
		}
		for _, host := range []string{"localhost:8080", "LOCALHOST", "127.0.0.1:8080", "127.0.0.2", "[::1]:8080", "madspark.lan:8080", "localhost."} {
			if status, body := send(t, http.MethodGet, srv.URL+path, "", "Host", host); status == 421 {
				t.Errorf("%s with Host %s: %d %s", path, host, status, body)
			}
		}
	}
	status, body := send(t, http.MethodPost, srv.URL+"/v1/chat/completions", chatBody, "Host", "evil.example:8080", "Content-Type", "application/json")
	if _, code := errType(t, body); status != 421 || code != "host_not_allowed" || m.callCount() != 0 {
		t.Errorf("a chat completion for another host: %d %s (%d calls)", status, body, m.callCount())
	}

	token := strings.Repeat("k", MinTokenLength)
	tok, _, _ := guarded(t, Config{Addr: "0.0.0.0:8080", Token: token})
	if status, body := send(t, http.MethodGet, tok.URL+"/v1/models", "", "Host", "madspark.example.org", "Authorization", "Bearer "+token); status != 200 {
		t.Errorf("with a token, another host: %d %s", status, body)
	}
	if _, err := New(Config{Models: []Model{newFake("m")}, AllowedHosts: []string{"http://x/"}}); err == nil {
		t.Error("an allowed host with a scheme is accepted")
	}
}

// TestFailedAuthThrottled: after a burst of wrong tokens a client's
// requests are answered 429 with Retry-After, the right token included,
// so that guessing is slow; another address is not affected.
func TestFailedAuthThrottled(t *testing.T) {
	s, err := New(Config{Models: []Model{newFake("m")}, Token: "right", AuthFailures: 3})
	if err != nil {
		t.Fatal(err)
	}
	from := func(ip, token string) *httptest.ResponseRecorder {
		req := httptest.NewRequest(http.MethodGet, "http://localhost/v1/models", nil)
		req.RemoteAddr = ip + ":5000"
		req.Header.Set("Authorization", "Bearer "+token)
		rec := httptest.NewRecorder()
		s.Handler().ServeHTTP(rec, req)
		return rec
	}
	for i := range 3 {
		if rec := from("192.0.2.1", "wrong"); rec.Code != 401 {
			t.Fatalf("wrong token %d: %d", i, rec.Code)
		}
	}
	for _, token := range []string{"wrong", "right"} {
		rec := from("192.0.2.1", token)
		if rec.Code != 429 || rec.Header().Get("Retry-After") == "" {
			t.Errorf("after the burst, token %s: %d %v", token, rec.Code, rec.Header())
		}
	}
	if rec := from("192.0.2.2", "right"); rec.Code != 200 {
		t.Errorf("another address: %d", rec.Code)
	}
	// The loopback addresses are one machine: guessing from 127.0.0.2,
	// 127.0.0.3… is as slow as from 127.0.0.1.
	for i := range 3 {
		if rec := from(fmt.Sprintf("127.0.0.%d", i+1), "wrong"); rec.Code != 401 {
			t.Fatalf("wrong token from loopback %d: %d", i, rec.Code)
		}
	}
	for _, ip := range []string{"127.0.0.4", "127.9.9.9", "[::1]"} {
		if rec := from(ip, "wrong"); rec.Code != 429 {
			t.Errorf("after the burst on loopback, from %s: %d", ip, rec.Code)
		}
	}
}

// TestNoCredentialNotThrottled: requests that carry no credential, such as
// the ones an <img> of a foreign page makes a browser send, are answered
// 401 without counting as failures, so the token's holder at the same
// address is never refused because of them; wrong credentials are still
// throttled per address, and another address's failures refuse no one
// else.
func TestNoCredentialNotThrottled(t *testing.T) {
	const right = "the-right-token"
	s, err := New(Config{Models: []Model{newFake("m")}, Token: right, AuthFailures: 3})
	if err != nil {
		t.Fatal(err)
	}
	from := func(ip string, header ...string) *httptest.ResponseRecorder {
		req := httptest.NewRequest(http.MethodGet, "http://localhost/v1/models", nil)
		req.RemoteAddr = ip + ":5000"
		for i := 0; i+1 < len(header); i += 2 {
			req.Header.Set(header[i], header[i+1])
		}
		rec := httptest.NewRecorder()
		s.Handler().ServeHTTP(rec, req)
		return rec
	}
	for i := range 50 {
		rec := from("192.0.2.1", "Origin", "https://evil.example", "Sec-Fetch-Site", "cross-site")
		if i%2 == 1 {
			rec = from("192.0.2.1", "Authorization", "  ")
		}
		if typ, code := errType(t, rec.Body.String()); rec.Code != 401 || typ != "invalid_request_error" || code != "invalid_api_key" || !strings.Contains(rec.Body.String(), "missing API key") {
			t.Fatalf("request %d without a credential: %d %s", i, rec.Code, rec.Body)
		}
	}
	if rec := from("192.0.2.1", "Authorization", "Bearer "+right); rec.Code != 200 {
		t.Fatalf("the right token after 50 requests without one: %d %s", rec.Code, rec.Body)
	}
	for i := range 3 {
		if rec := from("192.0.2.9", "Authorization", "Bearer wrong"); rec.Code != 401 || !strings.Contains(rec.Body.String(), "invalid API key") {
			t.Fatalf("wrong token %d: %d %s", i, rec.Code, rec.Body)
		}
	}
	if rec := from("192.0.2.9", "Authorization", "Bearer wrong"); rec.Code != 429 {
		t.Errorf("wrong tokens beyond the burst: %d", rec.Code)
	}
	if rec := from("192.0.2.1", "Authorization", "Bearer "+right); rec.Code != 200 {
		t.Errorf("the right token while another address is throttled: %d %s", rec.Code, rec.Body)
	}
	// Without a credential the throttled address still gets 401, not 429:
	// there is nothing to guess with.
	if rec := from("192.0.2.9"); rec.Code != 401 {
		t.Errorf("no credential from a throttled address: %d", rec.Code)
	}
}

// TestStreamOriginChecked: a stream route (SSE or WebSocket) is refused to
// a page of another origin, with the check of the state-changing routes:
// scheme, host and port compared, so a configured https origin does not
// admit its http twin nor another port. The server's own page, a
// configured origin and clients that are not browsers pass; other GET
// routes are not refused.
func TestStreamOriginChecked(t *testing.T) {
	m := newFake("m")
	s, err := New(Config{Models: []Model{m}, CORSOrigins: []string{"https://ui.example"},
		StreamRoutes: []string{"GET /api/runs/{id}/events", "GET /ws/runs/{id}"}})
	if err != nil {
		t.Fatal(err)
	}
	streamed := 0
	for _, p := range []string{"GET /api/runs/{id}/events", "GET /ws/runs/{id}"} {
		s.Mux().HandleFunc(p, func(w http.ResponseWriter, _ *http.Request) { streamed++; _, _ = io.WriteString(w, "data: x\n\n") })
	}
	srv := httptest.NewServer(s.Handler())
	t.Cleanup(srv.Close)
	own := srv.URL
	for _, path := range []string{"/api/runs/r1/events", "/ws/runs/r1"} {
		for _, tt := range []struct {
			name   string
			header []string
		}{
			{"foreign origin", []string{"Origin", "https://evil.example"}},
			{"foreign origin, cross-site", []string{"Origin", "https://evil.example", "Sec-Fetch-Site", "cross-site"}},
			{"an <img> of a foreign page", []string{"Sec-Fetch-Site", "cross-site"}},
			{"same site, another port", []string{"Origin", "http://localhost:5173", "Sec-Fetch-Site", "same-site"}},
			{"null origin", []string{"Origin", "null"}},
			{"the allowed origin's http twin", []string{"Origin", "http://ui.example", "Sec-Fetch-Site", "cross-site"}},
			{"the allowed origin's http twin, old browser", []string{"Origin", "http://ui.example"}},
			{"the allowed origin on another port", []string{"Origin", "https://ui.example:8443"}},
			{"own host over another scheme", []string{"Origin", strings.Replace(own, "http://", "https://", 1)}},
		} {
			status, body := send(t, http.MethodGet, srv.URL+path, "", tt.header...)
			if typ, _ := errType(t, body); status != 403 || typ != "forbidden" || !strings.Contains(body, "--allowed-origins") {
				t.Errorf("%s, %s: %d %s", path, tt.name, status, body)
			}
		}
	}
	if streamed != 0 {
		t.Fatalf("refused streams were served %d times", streamed)
	}
	for _, tt := range []struct {
		name   string
		header []string
	}{
		{"own origin", []string{"Origin", own, "Sec-Fetch-Site", "same-origin"}},
		{"own origin, old browser", []string{"Origin", own}},
		{"allowed origin", []string{"Origin", "https://ui.example", "Sec-Fetch-Site", "cross-site"}},
		{"allowed origin, old browser, default port written", []string{"Origin", "https://UI.example:443"}},
		{"not a browser", nil},
		{"typed in the address bar", []string{"Sec-Fetch-Site", "none"}},
	} {
		if status, body := send(t, http.MethodGet, srv.URL+"/api/runs/r1/events", "", tt.header...); status != 200 {
			t.Errorf("%s: %d %s", tt.name, status, body)
		}
	}
	if status, body := send(t, http.MethodGet, srv.URL+"/v1/models", "", "Origin", "https://evil.example", "Sec-Fetch-Site", "cross-site"); status != 200 {
		t.Errorf("another GET route refused: %d %s", status, body)
	}
}

// TestOriginsHandler: Origins guards a handler of its own, whatever the
// method, with the server's rule and its JSON 403.
func TestOriginsHandler(t *testing.T) {
	if _, err := NewOrigins([]string{"ui.example"}); err == nil {
		t.Error("an origin without a scheme is accepted")
	}
	o, err := NewOrigins([]string{"https://ui.example"})
	if err != nil {
		t.Fatal(err)
	}
	served := 0
	h := o.Handler(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { served++ }))
	for _, tt := range []struct {
		origin, site string
		want         int
	}{
		{"https://ui.example", "cross-site", 200},
		{"http://ui.example", "cross-site", 403},
		{"https://evil.example", "", 403},
		{"http://localhost", "", 200}, // the request's own origin
		{"", "", 200},
	} {
		req := httptest.NewRequest(http.MethodGet, "http://localhost/mcp", nil)
		if tt.origin != "" {
			req.Header.Set("Origin", tt.origin)
		}
		if tt.site != "" {
			req.Header.Set("Sec-Fetch-Site", tt.site)
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if rec.Code != tt.want {
			t.Errorf("%q %q: %d %s", tt.origin, tt.site, rec.Code, rec.Body)
		}
	}
	if served != 3 {
		t.Errorf("served %d, want 3", served)
	}
}
