package api

import (
	"crypto/sha256"
	"encoding/hex"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"

	"golang.org/x/time/rate"
)

// limiter keeps a token bucket per client: per bearer token when the
// request carries one (so that the clients of one proxy or one NAT that
// hold different tokens do not share a bucket), else per IP address.
// Buckets idle for long are forgotten.
type limiter struct {
	rate  rate.Limit
	burst int

	mu      sync.Mutex
	clients map[string]*client
	swept   time.Time
}

type client struct {
	lim  *rate.Limiter
	seen time.Time
}

// idleTTL is how long an unused bucket is kept. A bucket idle that long
// is full again anyway.
const idleTTL = 10 * time.Minute

func newLimiter(perSecond float64, burst int) *limiter {
	return &limiter{rate: rate.Limit(perSecond), burst: burst, clients: map[string]*client{}, swept: time.Now()}
}

// allow takes a token for r's client. When there is none it reports how
// long until there will be.
func (l *limiter) allow(r *http.Request) (time.Duration, bool) {
	key := clientKey(r)
	now := time.Now()
	l.mu.Lock()
	if now.Sub(l.swept) > idleTTL {
		for k, c := range l.clients {
			if now.Sub(c.seen) > idleTTL {
				delete(l.clients, k)
			}
		}
		l.swept = now
	}
	c := l.clients[key]
	if c == nil {
		c = &client{lim: rate.NewLimiter(l.rate, l.burst)}
		l.clients[key] = c
	}
	c.seen = now
	l.mu.Unlock()
	res := c.lim.ReserveN(now, 1)
	if d := res.DelayFrom(now); d > 0 {
		res.CancelAt(now)
		return d, false
	}
	return 0, true
}

// clientKey names r's client: a digest of its bearer token, or its IP
// address (X-Forwarded-For is not trusted: a client could set it).
func clientKey(r *http.Request) string {
	if scheme, token, ok := strings.Cut(r.Header.Get("Authorization"), " "); ok && strings.EqualFold(scheme, "Bearer") && token != "" {
		sum := sha256.Sum256([]byte(strings.TrimSpace(token)))
		return "token:" + hex.EncodeToString(sum[:8])
	}
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		host = r.RemoteAddr
	}
	return "ip:" + host
}
