package server

import (
	"math"
	"net"
	"net/http"
	"net/netip"
	"sync"
	"time"
)

// Bounds of the guessing of tokens. Every token presented — a bearer token
// on the API, a token at the dashboard's /login — is checked only if its
// client may still be refused one: a client address holds a bucket of
// ClientGuesses refusals that refills by one every ClientRefill, and all
// clients together a bucket of GlobalGuesses that refills by one every
// GlobalRefill. A presentation takes one from both before the token is
// checked and gives it back when the token was right; with either bucket
// empty, the token is not checked at all and the answer is 429 with
// Retry-After, so that neither a right nor a wrong token can be told apart
// faster than the buckets refill. An address that presented a right token
// within knownFor is spared the global bucket (its own still applies): a
// flood of guesses from many addresses slows new clients down but does not
// lock out the workers already working. docs/operations.md, "Tokens,
// logins and proxies", says why and what it means behind a proxy.
const (
	// ClientGuesses is how many refused tokens a client address may
	// present in a row before it is throttled.
	ClientGuesses = 10
	// ClientRefill is how often a throttled client address may present one
	// more token: 10 a minute.
	ClientRefill = 6 * time.Second
	// GlobalGuesses is how many refused tokens all clients together may
	// present in a row.
	GlobalGuesses = 100
	// GlobalRefill is how often one more may be presented: 100 a minute.
	GlobalRefill = 600 * time.Millisecond
	// knownFor is how long an address that presented a right token is
	// spared the global bucket.
	knownFor = time.Hour
	// guessClients bounds the client addresses tracked at once.
	guessClients = 10000
)

// guessLimiter holds the buckets of refused tokens.
type guessLimiter struct {
	now func() time.Time

	mu      sync.Mutex
	global  bucket
	clients map[string]*guessClient
}

// bucket is a token bucket: n tokens at time at, refilling by one every
// refill up to max.
type bucket struct {
	n  float64
	at time.Time
}

// level refills b to now and returns its tokens.
func (b *bucket) level(now time.Time, max float64, refill time.Duration) float64 {
	if d := now.Sub(b.at); d > 0 {
		b.n = math.Min(max, b.n+float64(d)/float64(refill))
	}
	b.at = now
	return b.n
}

// wait is how long until b holds one token, in whole seconds (rounded
// up, at least one), as Retry-After says it.
func (b *bucket) wait(refill time.Duration) time.Duration {
	d := time.Duration((1 - b.n) * float64(refill))
	return max(1, (d+time.Second-1)/time.Second) * time.Second
}

type guessClient struct {
	bucket
	knownUntil time.Time // a right token was presented within knownFor before this
}

func newGuessLimiter(now func() time.Time) *guessLimiter {
	return &guessLimiter{now: now, global: bucket{n: GlobalGuesses, at: now()}, clients: map[string]*guessClient{}}
}

// guess is one presentation of a token, taken from the buckets.
type guess struct {
	client string
	global bool // taken from the global bucket too
}

// take takes one presentation for client from the buckets, or returns
// how long until one can be taken (whole seconds, at least one) and takes
// nothing.
func (l *guessLimiter) take(client string) (guess, time.Duration) {
	l.mu.Lock()
	defer l.mu.Unlock()
	now := l.now()
	c := l.clients[client]
	if c == nil {
		if len(l.clients) >= guessClients {
			l.prune(now)
		}
		c = &guessClient{bucket: bucket{n: ClientGuesses, at: now}}
		l.clients[client] = c
	}
	if c.level(now, ClientGuesses, ClientRefill) < 1 {
		return guess{}, c.wait(ClientRefill)
	}
	known := now.Before(c.knownUntil)
	if !known && l.global.level(now, GlobalGuesses, GlobalRefill) < 1 {
		return guess{}, l.global.wait(GlobalRefill)
	}
	c.n--
	if !known {
		l.global.n--
	}
	return guess{client: client, global: !known}, 0
}

// settle ends a presentation: a right token gives back what it took and
// spares its address the global bucket for knownFor.
func (l *guessLimiter) settle(g guess, right bool) {
	if !right {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	now := l.now()
	if g.global {
		l.global.n = math.Min(GlobalGuesses, l.global.n+1)
	}
	if c := l.clients[g.client]; c != nil {
		c.n = math.Min(ClientGuesses, c.n+1)
		c.knownUntil = now.Add(knownFor)
	}
}

// prune makes room among the tracked clients: first those with a full
// bucket and no right token within knownFor (dropping them changes
// nothing), then those with no right token within knownFor (each may
// guess its ClientGuesses again, still within the global bucket), then
// any.
func (l *guessLimiter) prune(now time.Time) {
	for _, drop := range []func(c *guessClient) bool{
		func(c *guessClient) bool {
			return !now.Before(c.knownUntil) && c.level(now, ClientGuesses, ClientRefill) >= ClientGuesses
		},
		func(c *guessClient) bool { return !now.Before(c.knownUntil) },
		func(*guessClient) bool { return true },
	} {
		for k, c := range l.clients {
			if len(l.clients) < guessClients/2 {
				return
			}
			if drop(c) {
				delete(l.clients, k)
			}
		}
	}
}

// checkToken checks a token presented by r's client, within the bounds of
// guessing: ok when it is one of the server's tokens; retry > 0 when the
// client may not present one now (the token was not checked).
func (s *Server) checkToken(r *http.Request, token string) (ok bool, retry time.Duration) {
	g, retry := s.guesses.take(clientKey(r.RemoteAddr))
	if retry > 0 {
		return false, retry
	}
	ok = s.auth.valid(token)
	s.guesses.settle(g, ok)
	return ok, 0
}

// clientKey is what a client's guesses are counted under: its IP address,
// an IPv6 address's /64 (a single host is commonly given a /64 to draw
// from).
func clientKey(remoteAddr string) string {
	host, _, err := net.SplitHostPort(remoteAddr)
	if err != nil {
		host = remoteAddr
	}
	ip, err := netip.ParseAddr(host)
	if err != nil {
		return host
	}
	ip = ip.Unmap().WithZone("")
	if ip.Is6() {
		p, _ := ip.Prefix(64)
		return p.String()
	}
	return ip.String()
}
