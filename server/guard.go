package server

import (
	"fmt"
	"mime"
	"net"
	"net/http"
	"net/netip"
	"slices"
	"strings"
	"sync"
	"time"

	"golang.org/x/time/rate"
)

// The server's defences against the pages of other sites, which a user's
// browser may load while the server runs on the user's machine:
//
//   - hostChecked refuses a request whose Host header is not a name the
//     server answers to, so that a page whose DNS name was rebound to the
//     server's address cannot read from it (DNS rebinding);
//   - crossOrigin refuses a state-changing request sent by a page of
//     another origin (cross-site request forgery), judged by
//     Sec-Fetch-Site and Origin (net/http's CrossOriginProtection);
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

// crossOrigin refuses, with 403, a request of an unsafe method (any but
// GET, HEAD and OPTIONS) that a browser sent on behalf of a page of
// another origin than the server's own and Config.CORSOrigins. Requests
// that carry neither Sec-Fetch-Site nor Origin do not come from a page and
// pass.
func (s *Server) crossOrigin(next http.Handler) http.Handler {
	cop := http.NewCrossOriginProtection()
	for _, o := range s.cfg.CORSOrigins {
		// New has checked the origins' form already.
		_ = cop.AddTrustedOrigin(strings.TrimSuffix(o, "/"))
	}
	cop.SetDenyHandler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		origin := r.Header.Get("Origin")
		if origin == "" {
			origin = "another site"
		}
		writeRouteError(w, r, http.StatusForbidden, "cross_origin_refused",
			fmt.Sprintf("cross-origin %s refused: a page of %s may not change this server's state; allow its origin with --allowed-origins (MADSPARK_CORS_ORIGINS)", r.Method, clip(origin, 100)))
	}))
	return cop.Handler(next)
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

// remoteIP is r's client address, an IPv6 one as its /64.
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
	if addr.Is6() {
		p, _ := addr.Prefix(64)
		return p.String()
	}
	return addr.String()
}
