package api

import (
	"container/list"
	"crypto/sha256"
	"encoding/hex"
	"net"
	"net/http"
	"net/netip"
	"strings"
	"sync"
	"time"

	"golang.org/x/time/rate"

	"github.com/madspark/madspark/server"
)

// limiter keeps a token bucket per client: per bearer token when the
// server authenticated the request with it (the token is the server's own,
// so a client cannot make up new ones), else per IP address, an IPv6
// address counting as its /64 (what one host or one site is given). A
// token the server did not check gets no bucket of its own: a client that
// sends a fresh random token with every request is still one address.
//
// At most maxClients buckets are kept, least recently used first out; a
// bucket idle for idleTTL is forgotten (it would be full again anyway). So
// memory stays bounded whatever the clients send. A client whose bucket
// was pushed out starts again with a full one, which only the clients of
// more than maxClients addresses at once could bring about.
type limiter struct {
	rate       rate.Limit
	burst      int
	maxClients int

	mu      sync.Mutex
	clients map[string]*list.Element // of *client
	lru     list.List                // most recently seen first
}

type client struct {
	key  string
	lim  *rate.Limiter
	seen time.Time
}

// idleTTL is how long an unused bucket is kept. A bucket idle that long
// is full again anyway.
const idleTTL = 10 * time.Minute

// maxClients bounds the buckets kept at once: a few MiB at most.
const maxClients = 10000

func newLimiter(perSecond float64, burst int) *limiter {
	return &limiter{rate: rate.Limit(perSecond), burst: burst, maxClients: maxClients, clients: map[string]*list.Element{}}
}

// allow takes a token for r's client. When there is none it reports how
// long until there will be.
func (l *limiter) allow(r *http.Request) (time.Duration, bool) {
	return l.allowKey(clientKey(r), time.Now())
}

func (l *limiter) allowKey(key string, now time.Time) (time.Duration, bool) {
	l.mu.Lock()
	// Forget the idle buckets: they are at the back.
	for e := l.lru.Back(); e != nil; e = l.lru.Back() {
		c := e.Value.(*client)
		if now.Sub(c.seen) <= idleTTL {
			break
		}
		l.lru.Remove(e)
		delete(l.clients, c.key)
	}
	var c *client
	if e := l.clients[key]; e != nil {
		c = e.Value.(*client)
		l.lru.MoveToFront(e)
	} else {
		if l.lru.Len() >= l.maxClients {
			old := l.lru.Back()
			l.lru.Remove(old)
			delete(l.clients, old.Value.(*client).key)
		}
		c = &client{key: key, lim: rate.NewLimiter(l.rate, l.burst)}
		l.clients[key] = l.lru.PushFront(c)
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

// tracked is how many buckets are kept.
func (l *limiter) tracked() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.lru.Len()
}

// clientKey names r's client: a digest of its bearer token when the server
// authenticated the request with it, else its IP address, an IPv6 one
// as its /64 and every loopback address as one (X-Forwarded-For is not
// trusted: a client could set it).
func clientKey(r *http.Request) string {
	if server.Authenticated(r.Context()) {
		if scheme, token, ok := strings.Cut(r.Header.Get("Authorization"), " "); ok && strings.EqualFold(scheme, "Bearer") && token != "" {
			sum := sha256.Sum256([]byte(strings.TrimSpace(token)))
			return "token:" + hex.EncodeToString(sum[:8])
		}
	}
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		host = r.RemoteAddr
	}
	addr, err := netip.ParseAddr(host)
	if err != nil {
		return "ip:" + host
	}
	addr = addr.Unmap().WithZone("")
	if addr.IsLoopback() {
		// 127.0.0.0/8 and ::1 are one machine: its processes could
		// otherwise have a bucket per address.
		return "ip:loopback"
	}
	if addr.Is6() {
		p, _ := addr.Prefix(64)
		return "ip:" + p.String()
	}
	return "ip:" + addr.String()
}
