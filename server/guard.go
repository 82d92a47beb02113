package server

import (
	"errors"
	"fmt"
	"mime"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"

	"golang.org/x/time/rate"

	"github.com/madspark/madspark/input"
)

// The server's defences against the pages of other sites, which a user's
// browser may load while the server runs on the user's machine:
//
//   - hostChecked refuses a request whose Host header is not a name the
//     server answers to, so that a page whose DNS name was rebound to the
//     server's address cannot read from it (DNS rebinding);
//   - crossOrigin refuses a state-changing request, or a request for a
//     stream, sent by a page of another origin (cross-site request
//     forgery), judged by Sec-Fetch-Site and Origin (Origins), scheme,
//     host and port compared;
//   - jsonOnly refuses a request body that is not declared as JSON, so
//     that no "simple" cross-site form or text/plain request can reach a
//     JSON endpoint even from a browser that sends neither header.

// hostChecked refuses, with 421, a request whose Host header names another
// host than the address the server is bound to, localhost, a loopback
// address or one of Config.AllowedHosts. It checks nothing when a token is
// required: a page cannot send the token, whatever its name.
func (s *Server) hostChecked(next http.Handler) http.Handler {
	if s.cfg.Token != "" {
		return next
	}
	allowed := map[string]bool{"localhost": true}
	if host, _, err := net.SplitHostPort(s.cfg.Addr); err == nil && host != "" {
		allowed[normHost(host)] = true
	}
	for _, h := range s.cfg.AllowedHosts {
		allowed[normHost(h)] = true
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		host := normHost(r.Host)
		if allowed[host] || isLoopbackIP(host) {
			next.ServeHTTP(w, r)
			return
		}
		writeRouteError(w, r, http.StatusMisdirectedRequest, "host_not_allowed",
			fmt.Sprintf("host %q is not a name this server answers to; add it with --allowed-hosts (MADSPARK_ALLOWED_HOSTS)", clip(host, 100)))
	})
}

// normHost returns the host of a Host header or of a host[:port], without
// its port, brackets or trailing dot, in lower case.
func normHost(hostport string) string {
	host := hostport
	if h, _, err := net.SplitHostPort(hostport); err == nil {
		host = h
	}
	return strings.TrimSuffix(strings.ToLower(strings.Trim(host, "[]")), ".")
}

func isLoopbackIP(host string) bool {
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// crossOrigin refuses, with 403, a request that a browser sent on behalf of
// a page of another origin than the server's own and Config.CORSOrigins
// (Origins.Check): any request of an unsafe method (any but GET, HEAD and
// OPTIONS), and any request of a stream route (Config.StreamRoutes), whose
// answer a page could otherwise follow. Requests that carry neither
// Sec-Fetch-Site nor Origin do not come from a page and pass.
func (s *Server) crossOrigin(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.Method {
		case http.MethodGet, http.MethodHead, http.MethodOptions:
			if _, pattern := s.mux.Handler(r); !slices.Contains(s.cfg.StreamRoutes, pattern) {
				next.ServeHTTP(w, r)
				return
			}
		}
		if err := s.origins.Check(r); err != nil {
			origin := r.Header.Get("Origin")
			if origin == "" {
				origin = "another site"
			}
			what := "change this server's state"
			if r.Method == http.MethodGet || r.Method == http.MethodHead {
				what = "follow this server's streams"
			}
			writeRouteError(w, r, http.StatusForbidden, "cross_origin_refused",
				fmt.Sprintf("cross-origin %s refused: a page of %s may not %s; allow its origin with --allowed-origins (MADSPARK_CORS_ORIGINS)", r.Method, clip(input.Show(origin), 100), what))
			return
		}
		next.ServeHTTP(w, r)
	})
}

// Origins tells the requests that a browser sent on behalf of a page of
// an origin the server trusts (its own, or one configured) from those of
// other pages. An origin is a scheme, host and port, compared whole:
// https://ui.example and http://ui.example are two origins. The server
// applies it to state-changing requests and to its streams; others serving
// routes of their own for browsers can apply it with Handler.
type Origins struct {
	trusted map[string]bool
}

// NewOrigins returns the Origins that trust, besides each request's own
// origin, the origins given (scheme://host[:port], such as
// https://ui.example.org:8443).
func NewOrigins(trusted []string) (*Origins, error) {
	o := &Origins{trusted: map[string]bool{}}
	for _, t := range trusted {
		norm, ok := normOrigin(t)
		if !ok {
			return nil, fmt.Errorf("origin %q: want scheme://host[:port], such as https://ui.example.org", t)
		}
		o.trusted[norm] = true
	}
	return o, nil
}

// ErrCrossOrigin is the error of Origins.Check for a request sent by a
// page of an origin that is not trusted.
var ErrCrossOrigin = errors.New("cross-origin request from a page of an origin that is not allowed")

// Check reports whether r may be served as far as its origin goes: nil
// when the browser says it comes from the server's own origin or from no
// page (Sec-Fetch-Site same-origin or none), when its Origin is trusted,
// when it carries no Origin and no Sec-Fetch-Site (not a browser's page,
// or a browser that sends neither, which only a request that cannot read
// the answer would be), or, from a browser that sends no Sec-Fetch-Site,
// when its Origin is the request's own: the same scheme, host and port as
// the URL it asks for. Else ErrCrossOrigin.
func (o *Origins) Check(r *http.Request) error {
	origin := r.Header.Get("Origin")
	norm, ok := normOrigin(origin)
	trusted := ok && o.trusted[norm]
	switch r.Header.Get("Sec-Fetch-Site") {
	case "same-origin", "none":
		return nil
	case "":
		// Not a browser, or one without Fetch Metadata: the Origin
		// decides.
		if origin == "" || trusted || (ok && norm == ownOrigin(r)) {
			return nil
		}
	default: // same-site, cross-site
		if trusted {
			return nil
		}
	}
	return ErrCrossOrigin
}

// Handler refuses, with a JSON 403, the requests of next that Check
// refuses, whatever their method.
func (o *Origins) Handler(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if err := o.Check(r); err != nil {
			writeRouteError(w, r, http.StatusForbidden, "cross_origin_refused", "cross-origin request refused: a page of another site may not use this route")
			return
		}
		next.ServeHTTP(w, r)
	})
}

// ownOrigin is the origin of the URL r asks for, as normOrigin writes it:
// https when the connection is TLS, else http.
func ownOrigin(r *http.Request) string {
	scheme := "http"
	if r.TLS != nil {
		scheme = "https"
	}
	norm, _ := normOrigin(scheme + "://" + r.Host)
	return norm
}

// normOrigin writes an origin as browsers serialise it: scheme and host in
// lower case, the port only when it is not the scheme's default, no path.
// ok is false for anything that is not an http or https origin ("null").
func normOrigin(origin string) (string, bool) {
	u, err := url.Parse(strings.TrimSuffix(strings.TrimSpace(origin), "/"))
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.Path != "" || u.RawQuery != "" || u.User != nil || u.Fragment != "" {
		return "", false
	}
	scheme, host, port := strings.ToLower(u.Scheme), strings.ToLower(u.Hostname()), u.Port()
	if (scheme == "http" && port == "80") || (scheme == "https" && port == "443") {
		port = ""
	}
	if strings.Contains(host, ":") {
		host = "[" + host + "]"
	}
	if port != "" {
		host += ":" + port
	}
	return scheme + "://" + host, true
}

// jsonOnly refuses, with 415, a request that has a body of another media
// type than application/json on a route that takes one (every POST, PUT
// and PATCH route of the server takes JSON, but for the file uploads of
// Config.FileRoutes, which take text/csv and multipart/form-data too).
func (s *Server) jsonOnly(w http.ResponseWriter, r *http.Request) bool {
	switch r.Method {
	case http.MethodPost, http.MethodPut, http.MethodPatch:
	default:
		return true
	}
	if r.ContentLength == 0 {
		return true // nothing to decode
	}
	ct := r.Header.Get("Content-Type")
	mt, _, err := mime.ParseMediaType(ct)
	if err == nil && mt == "application/json" {
		return true
	}
	if err == nil && (mt == "text/csv" || mt == "multipart/form-data") && slices.Contains(s.cfg.FileRoutes, r.URL.Path) {
		return true
	}
	if ct == "" {
		ct = "none"
	}
	writeRouteError(w, r, http.StatusUnsupportedMediaType, "unsupported_media_type",
		fmt.Sprintf("Content-Type must be application/json, got %s", clip(ct, 100)))
	return false
}

// clip shortens s, a value a client sent, to at most n bytes for an error
// message.
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}

// failureLimiter keeps a token bucket of failed authentications per
// client address. At most maxTracked addresses are kept; when more fail,
// the buckets are forgotten and start full again, which only a client of
// that many addresses could bring about.
type failureLimiter struct {
	every rate.Limit
	burst int

	mu      sync.Mutex
	clients map[string]*rate.Limiter
}

const maxTracked = 10000

func newFailureLimiter(every rate.Limit, burst int) *failureLimiter {
	return &failureLimiter{every: every, burst: burst, clients: map[string]*rate.Limiter{}}
}

// wait reports how long client must wait before its token is checked
// again: 0 unless it used up its failures.
func (l *failureLimiter) wait(client string) time.Duration {
	l.mu.Lock()
	lim := l.clients[client]
	l.mu.Unlock()
	if lim == nil {
		return 0
	}
	now := time.Now()
	if lim.TokensAt(now) >= 1 {
		return 0
	}
	res := lim.ReserveN(now, 1)
	d := res.DelayFrom(now)
	res.CancelAt(now)
	return max(d, time.Second)
}

// fail counts a failed authentication of client.
func (l *failureLimiter) fail(client string) {
	l.mu.Lock()
	lim := l.clients[client]
	if lim == nil {
		if len(l.clients) >= maxTracked {
			clear(l.clients)
		}
		lim = rate.NewLimiter(l.every, l.burst)
		l.clients[client] = lim
	}
	l.mu.Unlock()
	lim.Allow()
}

// remoteIP is r's client address, an IPv6 one as its /64, and every
// loopback address as one: they are one machine.
func remoteIP(r *http.Request) string {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		host = r.RemoteAddr
	}
	addr, err := netip.ParseAddr(host)
	if err != nil {
		return host
	}
	addr = addr.Unmap().WithZone("")
	if addr.IsLoopback() {
		return "loopback"
	}
	if addr.Is6() {
		p, _ := addr.Prefix(64)
		return p.String()
	}
	return addr.String()
}
