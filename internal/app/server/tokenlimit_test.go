package server

import (
	"fmt"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/fenced/fenced/internal/test/testdb"
)

// clock is a settable clock for the token throttle.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func newClock() *clock { return &clock{t: time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)} }

func (c *clock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *clock) advance(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

// bearer sends GET /v1/leases with token, and the headers given.
func (e *env) bearer(token string, header ...string) response {
	e.t.Helper()
	r, err := e.send("GET", "/v1/leases", nil, append([]string{"Authorization", "Bearer " + token}, header...)...)
	if err != nil {
		e.t.Fatal(err)
	}
	return r
}

// wantThrottled checks a 429 too_many_requests with Retry-After retry.
func wantThrottled(t *testing.T, what string, r response, retry string) {
	t.Helper()
	if r.status != http.StatusTooManyRequests || r.body["error"] != codeTooManyRequests || r.header.Get("Retry-After") != retry {
		t.Fatalf("%s: %d %s (Retry-After %q), want 429 %s with Retry-After %s", what, r.status, r.raw,
			r.header.Get("Retry-After"), codeTooManyRequests, retry)
	}
}

const wrongToken = "wrong-token-0123456789abcdef"

// TestWrongBearerTokensAreThrottled: a client address may present
// ClientGuesses wrong bearer tokens in a row; then every token it
// presents, the right one too, is refused unchecked (429 with Retry-After)
// until its bucket refills by one every ClientRefill. A right token or no
// token costs nothing.
func TestWrongBearerTokensAreThrottled(t *testing.T) {
	t.Parallel()
	t.Run("PerClientAddress", func(t *testing.T) {
		t.Parallel()
		c := newClock()
		e := setup(t, testdb.SQLite(t), Config{Tokens: []string{tokenA}, Now: c.now})
		for range 3 * ClientGuesses {
			if r := e.bearer(tokenA); r.status != http.StatusOK {
				t.Fatalf("the right token = %d %s", r.status, r.raw)
			}
			if r, _ := e.send("GET", "/v1/leases", nil, "Authorization", ""); r.status != http.StatusUnauthorized {
				t.Fatalf("no token = %d", r.status)
			}
		}
		for i := range ClientGuesses {
			if r := e.bearer(wrongToken); r.status != http.StatusUnauthorized {
				t.Fatalf("wrong token %d = %d %s, want 401", i+1, r.status, r.raw)
			}
		}
		wantThrottled(t, "a wrong token past the limit", e.bearer(wrongToken), "6")
		wantThrottled(t, "the right token past the limit", e.bearer(tokenA), "6")
		c.advance(ClientRefill - time.Second)
		wantThrottled(t, "the right token a second before the refill", e.bearer(tokenA), "1")
		c.advance(time.Second)
		// One more try now: a right token gives it back, a wrong one uses it.
		for range 3 {
			if r := e.bearer(tokenA); r.status != http.StatusOK {
				t.Fatalf("the right token after the refill = %d %s", r.status, r.raw)
			}
		}
		if r := e.bearer(wrongToken); r.status != http.StatusUnauthorized {
			t.Fatalf("a wrong token after the refill = %d, want 401", r.status)
		}
		wantThrottled(t, "the next one", e.bearer(tokenA), "6")
		// The dashboard's login draws on the same bucket.
		req, _ := http.NewRequest("POST", "/login", nil)
		req.RemoteAddr = "127.0.0.1:1"
		if ok, retry := e.srv.CheckToken(req, tokenA); ok || retry != ClientRefill {
			t.Fatalf("CheckToken while throttled = %v, %s; want refused for %s", ok, retry, ClientRefill)
		}
	})
	t.Run("ConcurrentGuessesAreBoundedToo", func(t *testing.T) {
		t.Parallel()
		e := setup(t, testdb.SQLite(t), Config{Tokens: []string{tokenA}, Now: newClock().now})
		var mu sync.Mutex
		statuses := map[int]int{}
		var wg sync.WaitGroup
		for range 5 * ClientGuesses {
			wg.Go(func() {
				r, err := e.send("GET", "/v1/leases", nil, "Authorization", "Bearer "+wrongToken)
				if err != nil {
					t.Error(err)
					return
				}
				mu.Lock()
				statuses[r.status]++
				mu.Unlock()
			})
		}
		wg.Wait()
		if statuses[http.StatusUnauthorized] != ClientGuesses || statuses[http.StatusTooManyRequests] != 4*ClientGuesses {
			t.Fatalf("%d wrong tokens at once were answered %v; want %d checked (401), the rest 429",
				5*ClientGuesses, statuses, ClientGuesses)
		}
	})
	t.Run("AllClientsTogetherSpareKnownAddresses", func(t *testing.T) {
		t.Parallel()
		c := newClock()
		e := setup(t, testdb.SQLite(t), Config{Tokens: []string{tokenA}, Now: c.now, BehindTLSProxy: true})
		from := func(i int) []string { return []string{"X-Forwarded-For", fmt.Sprintf("203.0.113.%d", i)} }
		if r := e.bearer(tokenA, from(200)...); r.status != http.StatusOK {
			t.Fatalf("a worker's right token = %d", r.status)
		}
		// GlobalGuesses wrong tokens from many addresses, each within its own bucket.
		for i := range GlobalGuesses {
			if r := e.bearer(wrongToken, from(i/ClientGuesses)...); r.status != http.StatusUnauthorized {
				t.Fatalf("wrong token %d = %d %s, want 401", i+1, r.status, r.raw)
			}
		}
		// A new address is refused unchecked, right token or not.
		wantThrottled(t, "a new address's right token", e.bearer(tokenA, from(150)...), "1")
		// The address that presented a right token before goes on working.
		if r := e.bearer(tokenA, from(200)...); r.status != http.StatusOK {
			t.Fatalf("a known address's right token = %d %s", r.status, r.raw)
		}
		c.advance(GlobalRefill)
		if r := e.bearer(tokenA, from(150)...); r.status != http.StatusOK {
			t.Fatalf("a new address's right token after the refill = %d %s", r.status, r.raw)
		}
	})
}

// TestClientAddressBehindAProxy: with BehindTLSProxy the client address is
// the last X-Forwarded-For entry (the one the proxy appended), so one
// client's wrong tokens throttle that client only, and an entry the client
// wrote itself changes nothing; without it X-Forwarded-For is ignored.
func TestClientAddressBehindAProxy(t *testing.T) {
	t.Parallel()
	for _, trusted := range []bool{true, false} {
		t.Run(fmt.Sprintf("Trusted=%v", trusted), func(t *testing.T) {
			t.Parallel()
			e := setup(t, testdb.SQLite(t), Config{Tokens: []string{tokenA}, Now: newClock().now, BehindTLSProxy: trusted})
			for range ClientGuesses {
				e.bearer(wrongToken, "X-Forwarded-For", "198.51.100.1, 203.0.113.7")
			}
			wantThrottled(t, "the guessing client", e.bearer(tokenA, "X-Forwarded-For", "203.0.113.7"), "6")
			wantThrottled(t, "the guessing client naming another address first",
				e.bearer(tokenA, "X-Forwarded-For", "192.0.2.9, 203.0.113.7"), "6")
			r := e.bearer(tokenA, "X-Forwarded-For", "203.0.113.8")
			if trusted && r.status != http.StatusOK {
				t.Fatalf("another client behind the proxy = %d %s, want 200", r.status, r.raw)
			}
			if !trusted {
				wantThrottled(t, "another X-Forwarded-For, not trusted", r, "6")
			}
		})
	}
	for _, c := range []struct {
		header []string
		want   string
	}{
		{[]string{"203.0.113.7"}, "203.0.113.7"},
		{[]string{"10.0.0.1, 203.0.113.7"}, "203.0.113.7"},
		{[]string{"10.0.0.1", "192.0.2.1,203.0.113.7 "}, "203.0.113.7"},
		{[]string{"203.0.113.7:4711"}, "203.0.113.7"},
		{[]string{"[2001:db8::1]:80"}, "2001:db8::1"},
		{[]string{"2001:db8::1"}, "2001:db8::1"},
		{[]string{"::ffff:203.0.113.7"}, "203.0.113.7"},
		{[]string{"203.0.113.7, unknown"}, ""},
		{[]string{"fe80::1%eth0"}, ""},
		{[]string{""}, ""},
		{nil, ""},
	} {
		ip, ok := lastForwardedFor(c.header)
		if got := map[bool]string{true: ip.String(), false: ""}[ok]; got != c.want {
			t.Errorf("lastForwardedFor(%q) = %q, want %q", c.header, got, c.want)
		}
	}
	for addr, want := range map[string]string{
		"203.0.113.7:5000":            "203.0.113.7",
		"[2001:db8:1:2:3:4:5:6]:5000": "2001:db8:1:2::/64",
		"[2001:db8:1:2:ff::1]:1":      "2001:db8:1:2::/64",
		"[::ffff:203.0.113.7]:1":      "203.0.113.7",
	} {
		if got := clientKey(addr); got != want {
			t.Errorf("clientKey(%q) = %q, want %q", addr, got, want)
		}
	}
}

// TestRequestSecure: a request is secure over the server's own TLS, or
// behind a TLS proxy unless the proxy says it took plain HTTP; a client's
// X-Forwarded-Proto is not trusted otherwise.
func TestRequestSecure(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		behindProxy bool
		proto       string
		want        bool
	}{
		{false, "", false},
		{false, "https", false},
		{true, "", true},
		{true, "https", true},
		{true, "http", false},
		{true, "HTTP ", false},
	} {
		s := &Server{cfg: Config{BehindTLSProxy: c.behindProxy}}
		r, _ := http.NewRequest("GET", "/", nil)
		if c.proto != "" {
			r.Header.Set("X-Forwarded-Proto", c.proto)
		}
		if got := s.RequestSecure(r); got != c.want {
			t.Errorf("behind a proxy %v, X-Forwarded-Proto %q: secure = %v, want %v", c.behindProxy, c.proto, got, c.want)
		}
	}
}

// TestNoTokensBehindAProxyServesLoopbackClientsOnly: without tokens only
// loopback clients are served, and behind a proxy the client is the one
// the proxy names, so a remote client reaching a loopback server through
// the proxy is refused.
func TestNoTokensBehindAProxyServesLoopbackClientsOnly(t *testing.T) {
	t.Parallel()
	e := setup(t, testdb.SQLite(t), Config{BehindTLSProxy: true})
	e.fails(http.StatusForbidden, codeForbidden, "GET", "/v1/leases", nil, "X-Forwarded-For", "203.0.113.7")
	e.fails(http.StatusForbidden, codeForbidden, "GET", "/v1/leases", nil, "X-Forwarded-For", "127.0.0.1, 203.0.113.7")
	e.ok("GET", "/v1/leases", nil)
	if r, _ := e.send("GET", "/v1/leases", nil, "X-Forwarded-For", "127.0.0.1"); r.status != http.StatusOK {
		t.Fatalf("a loopback client through the proxy = %d %s", r.status, r.raw)
	}
}
