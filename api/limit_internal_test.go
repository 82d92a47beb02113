package api

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/madspark/madspark/server"
)

// keyOf returns the limiter's key of a request from remote, with the
// Authorization header auth, served by a server whose token is token.
func keyOf(t *testing.T, token, remote, auth string) string {
	t.Helper()
	srv, err := server.New(server.Config{Token: token})
	if err != nil {
		t.Fatal(err)
	}
	var key string
	srv.Mux().HandleFunc("GET /k", func(w http.ResponseWriter, r *http.Request) { key = clientKey(r) })
	req := httptest.NewRequest("GET", "http://localhost/k", nil)
	req.RemoteAddr = remote
	if auth != "" {
		req.Header.Set("Authorization", auth)
	}
	rec := httptest.NewRecorder()
	srv.Handler().ServeHTTP(rec, req)
	if rec.Code != 200 {
		t.Fatalf("GET /k from %s: %d", remote, rec.Code)
	}
	return key
}

func TestClientKey(t *testing.T) {
	// Without a server token, a bearer token proves nothing: the address
	// is the client, whatever token it makes up.
	a := keyOf(t, "", "192.0.2.7:4000", "Bearer random-1")
	b := keyOf(t, "", "192.0.2.7:4001", "Bearer random-2")
	if a != "ip:192.0.2.7" || b != a {
		t.Errorf("unauthenticated tokens: keys %q and %q, want ip:192.0.2.7 for both", a, b)
	}
	// The server's own token is the client, from any address.
	c := keyOf(t, "s3cret", "192.0.2.7:4000", "Bearer s3cret")
	d := keyOf(t, "s3cret", "198.51.100.9:4000", "Bearer s3cret")
	if c != d || c == a || len(c) < len("token:")+16 || c[:6] != "token:" {
		t.Errorf("authenticated token: keys %q and %q", c, d)
	}
	// IPv6 addresses count by /64; an IPv4-mapped one is its IPv4 address.
	for _, tc := range []struct{ remote, want string }{
		{"[2001:db8:1:2::1]:80", "ip:2001:db8:1:2::/64"},
		{"[2001:db8:1:2:ffff:ffff:ffff:ffff]:81", "ip:2001:db8:1:2::/64"},
		{"[2001:db8:1:3::1]:80", "ip:2001:db8:1:3::/64"},
		{"[fe80::1%eth0]:80", "ip:fe80::/64"},
		{"[::ffff:192.0.2.7]:80", "ip:192.0.2.7"},
		// Every loopback address is the one machine: 127.x addresses
		// cannot multiply a process's rate limit.
		{"127.0.0.1:5000", "ip:loopback"},
		{"127.0.0.2:5000", "ip:loopback"},
		{"127.255.3.9:5001", "ip:loopback"},
		{"[::1]:80", "ip:loopback"},
		{"[::ffff:127.0.0.9]:80", "ip:loopback"},
		{"not-an-address", "ip:not-an-address"},
	} {
		if got := keyOf(t, "", tc.remote, ""); got != tc.want {
			t.Errorf("key of %s: %q, want %q", tc.remote, got, tc.want)
		}
	}
}

// TestLimiterBounded: however many clients come, at most maxClients
// buckets are kept, the least recently used going first, and idle ones are
// forgotten.
func TestLimiterBounded(t *testing.T) {
	l := newLimiter(1, 2)
	l.maxClients = 100
	now := time.Now()
	// A busy client, seen between the others, keeps its (empty) bucket.
	for range 2 {
		l.allowKey("busy", now)
	}
	for i := range 1000 {
		l.allowKey(fmt.Sprintf("ip:10.0.%d.%d", i/256, i%256), now)
		if i%50 == 0 {
			l.allowKey("busy", now)
		}
	}
	if n := l.tracked(); n != 100 {
		t.Fatalf("%d buckets kept, want 100", n)
	}
	if _, ok := l.allowKey("busy", now); ok {
		t.Error("the busy client's bucket was pushed out: it got a fresh burst")
	}
	if _, ok := l.allowKey("ip:10.0.0.0", now); !ok {
		t.Error("the oldest client should have been forgotten and start with a full bucket")
	}
	l.allowKey("late", now.Add(idleTTL+time.Second))
	if n := l.tracked(); n != 1 {
		t.Errorf("%d buckets kept after everyone else was idle for %s, want 1", n, idleTTL)
	}
}
