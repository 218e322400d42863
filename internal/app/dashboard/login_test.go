package dashboard_test

import (
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/fenced/fenced/internal/test/logbuf"

	"github.com/fenced/fenced/internal/app/dashboard"
	"github.com/fenced/fenced/internal/app/server"
	"github.com/fenced/fenced/internal/test/testdb"
)

const testToken = "dashboard-test-token-0123456789"

// fakeClock is a settable clock for session expiry.
type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *fakeClock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *fakeClock) advance(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

// login posts the token on the login form.
func (p *person) login(token, next string) page {
	p.t.Helper()
	return p.post("/login", url.Values{"token": {token}, "next": {next}})
}

// TestLogin: with tokens, a browser logs in with one and gets a session
// cookie (HttpOnly, SameSite=Strict, no token in it) that opens the
// dashboard but not the API; logout and expiry end it.
func TestLogin(t *testing.T) {
	t.Parallel()
	clock := &fakeClock{t: time.Now()}
	var log logbuf.Buffer
	e := setupWith(t, []string{testToken}, dashboard.Options{Now: clock.now, SessionTTL: time.Hour,
		Logger: slog.New(slog.NewTextHandler(&log, nil))})
	p := newPerson(t, e.url)

	if pg := p.get("/jobs?state=failed"); pg.status != 303 || pg.location != "/login?next="+url.QueryEscape("/jobs?state=failed") {
		t.Fatalf("GET /jobs without a session = %d %q", pg.status, pg.location)
	}
	if pg := p.get("/login"); pg.status != 200 || !strings.Contains(pg.body, `type="password"`) {
		t.Fatalf("GET /login = %d:\n%s", pg.status, pg.body)
	}
	if pg := p.login("wrong-token-wrong-token", "/"); pg.status != 401 || !strings.Contains(pg.body, "not one of this server") {
		t.Fatalf("a wrong token = %d:\n%s", pg.status, pg.body)
	}
	pg := p.login(testToken, "/jobs?state=failed")
	if pg.status != 303 || pg.location != "/jobs?state=failed" {
		t.Fatalf("login = %d %q", pg.status, pg.location)
	}
	cookies := (&http.Response{Header: pg.header}).Cookies()
	if len(cookies) == 0 {
		t.Fatal("login set no cookie")
	}
	c := cookies[len(cookies)-1]
	if c.Name != "fenced_session" || !c.HttpOnly || c.SameSite != http.SameSiteStrictMode || c.Secure ||
		strings.Contains(c.Value, testToken) || len(c.Value) < 40 {
		t.Fatalf("session cookie = %+v", c)
	}
	if pg := p.get("/jobs?state=failed"); pg.status != 200 || !strings.Contains(pg.body, "Log out") {
		t.Fatalf("GET /jobs logged in = %d", pg.status)
	}
	// The cookie is the dashboard's only: the API wants the bearer token.
	if pg := p.get("/v1/jobs"); pg.status != 401 {
		t.Fatalf("GET /v1/jobs with the session cookie = %d, want 401", pg.status)
	}
	e.call("GET", "/v1/jobs", nil, 200, nil)
	// An off-site next is not followed.
	if pg := newPerson(t, e.url).login(testToken, "//evil.example/"); pg.location != "/" {
		t.Fatalf("login with next=//evil.example/ goes to %q", pg.location)
	}

	// Logout ends the session: the same cookie no longer opens anything.
	csrf := csrfField.FindStringSubmatch(p.get("/").body)
	if csrf == nil {
		t.Fatal("no logout form")
	}
	if pg := p.post("/logout", url.Values{"csrf": {csrf[1]}}); pg.status != 303 || pg.location != "/login" {
		t.Fatalf("logout = %d %q", pg.status, pg.location)
	}
	stale := newPerson(t, e.url)
	stale.c.Jar.SetCookies(mustURL(e.url), []*http.Cookie{{Name: "fenced_session", Value: c.Value}})
	if pg := stale.get("/"); pg.status != 303 {
		t.Fatalf("the logged-out cookie still opens / (%d)", pg.status)
	}

	// Expiry: a session lasts SessionTTL.
	if pg := p.login(testToken, "/"); pg.status != 303 {
		t.Fatalf("login again = %d", pg.status)
	}
	clock.advance(59 * time.Minute)
	if pg := p.get("/"); pg.status != 200 {
		t.Fatalf("before expiry = %d", pg.status)
	}
	clock.advance(2 * time.Minute)
	if pg := p.get("/"); pg.status != 303 || !strings.HasPrefix(pg.location, "/login") {
		t.Fatalf("after expiry = %d %q", pg.status, pg.location)
	}
	if pg := p.post("/act", url.Values{"csrf": {"x"}, "action": {"retry"}, "job": {"1"}}); pg.status != 403 {
		t.Fatalf("POST after expiry = %d", pg.status)
	}
	if strings.Contains(log.String(), testToken) || !strings.Contains(log.String(), "dashboard login refused") {
		t.Fatalf("the log names the token or not the refusal:\n%s", log.String())
	}
}

// TestNoLoginWithoutTokens: a server without tokens asks for no login.
func TestNoLoginWithoutTokens(t *testing.T) {
	t.Parallel()
	e := setup(t)
	p := newPerson(t, e.url)
	if pg := p.get("/jobs"); pg.status != 200 || strings.Contains(pg.body, "Log out") {
		t.Fatalf("GET /jobs = %d", pg.status)
	}
	if pg := p.get("/login"); pg.status != 303 || pg.location != "/" {
		t.Fatalf("GET /login = %d %q", pg.status, pg.location)
	}
}

func mustURL(s string) *url.URL {
	u, err := url.Parse(s)
	if err != nil {
		panic(err)
	}
	return u
}

// TestLoginGuessesAreBounded: after server.ClientGuesses wrong tokens from
// one address, even the right token is refused unchecked (429 with
// Retry-After); the address then gets one more try every
// server.ClientRefill — it is slowed down, not locked out until a window
// ends — and the right token logs in.
func TestLoginGuessesAreBounded(t *testing.T) {
	t.Parallel()
	clock := &fakeClock{t: time.Now()}
	e := setupWith(t, []string{testToken}, dashboard.Options{Now: clock.now})
	p := newPerson(t, e.url)
	for i := range server.ClientGuesses {
		if pg := p.login("wrong-token-wrong-token", "/"); pg.status != 401 {
			t.Fatalf("wrong token %d = %d, want 401", i+1, pg.status)
		}
	}
	wantTooMany := func(what string, pg page) {
		t.Helper()
		if pg.status != 429 || pg.header.Get("Retry-After") != "6" || !strings.Contains(pg.body, "Too many wrong tokens") {
			t.Fatalf("%s = %d (Retry-After %q):\n%s", what, pg.status, pg.header.Get("Retry-After"), pg.body)
		}
	}
	wantTooMany("the right token after the wrong ones", p.login(testToken, "/"))
	clock.advance(server.ClientRefill)
	if pg := p.login("wrong-token-wrong-token", "/"); pg.status != 401 {
		t.Fatalf("a wrong token one refill later = %d, want 401 (checked)", pg.status)
	}
	wantTooMany("the next token at once", p.login(testToken, "/"))
	clock.advance(server.ClientRefill)
	if pg := p.login(testToken, "/jobs"); pg.status != 303 || pg.location != "/jobs" {
		t.Fatalf("the right token one refill later = %d %q", pg.status, pg.location)
	}
	// The API counts against the same address: its wrong bearer tokens
	// throttle the login too.
	for range server.ClientGuesses + 1 {
		req, _ := http.NewRequest("GET", e.url+"/v1/leases", nil)
		req.Header.Set("Authorization", "Bearer wrong-token-wrong-token")
		if resp, err := http.DefaultClient.Do(req); err == nil {
			resp.Body.Close()
		}
	}
	wantTooMany("a login after wrong bearer tokens", newPerson(t, e.url).login(testToken, "/"))
}

// TestLoginBehindAProxy: behind a TLS proxy (server.Config.BehindTLSProxy)
// logins are counted by the client address the proxy appended to
// X-Forwarded-For, so one client's wrong tokens do not lock out the others,
// and the session cookie is Secure unless the proxy says it took plain
// HTTP. Without it, X-Forwarded-For and X-Forwarded-Proto are not
// trusted: every client of the proxy is one address, and no cookie is
// Secure over plain HTTP.
func TestLoginBehindAProxy(t *testing.T) {
	t.Parallel()
	for _, trusted := range []bool{true, false} {
		t.Run(fmt.Sprintf("Trusted=%v", trusted), func(t *testing.T) {
			t.Parallel()
			clock := &fakeClock{t: time.Now()}
			e := setupServed(t, testdb.SQLite(t), server.Config{Tokens: []string{testToken}, BehindTLSProxy: trusted},
				dashboard.Options{Now: clock.now})
			login := func(token, client, proto string) page {
				p := newPerson(t, e.url)
				return p.post("/login", url.Values{"token": {token}, "next": {"/"}},
					"X-Forwarded-For", "192.0.2.1, "+client, "X-Forwarded-Proto", proto)
			}
			for range server.ClientGuesses {
				login("wrong-token-wrong-token", "203.0.113.7", "https")
			}
			if pg := login(testToken, "203.0.113.7", "https"); pg.status != 429 {
				t.Fatalf("the guessing client's next login = %d, want 429", pg.status)
			}
			pg := login(testToken, "203.0.113.8", "https")
			if !trusted {
				if pg.status != 429 {
					t.Fatalf("untrusted X-Forwarded-For: another client's login = %d, want 429 (one address)", pg.status)
				}
				clock.advance(server.ClientRefill)
				pg = login(testToken, "203.0.113.8", "https")
			}
			if pg.status != 303 {
				t.Fatalf("another client's login = %d:\n%s", pg.status, pg.body)
			}
			if c := sessionCookie(t, pg); c.Secure != trusted {
				t.Fatalf("X-Forwarded-Proto https, trusted %v: cookie Secure = %v", trusted, c.Secure)
			}
			if trusted {
				if c := sessionCookie(t, login(testToken, "203.0.113.9", "http")); c.Secure {
					t.Fatal("X-Forwarded-Proto http: the cookie is Secure")
				}
				if c := sessionCookie(t, login(testToken, "203.0.113.9", "")); !c.Secure {
					t.Fatal("behind a TLS proxy without X-Forwarded-Proto: the cookie is not Secure")
				}
			}
		})
	}
}

// TestLoginOverTLSSetsASecureCookie: over the server's own TLS the session
// cookie is Secure.
func TestLoginOverTLSSetsASecureCookie(t *testing.T) {
	t.Parallel()
	e := setupWith(t, []string{testToken}, dashboard.Options{})
	ts := httptest.NewUnstartedServer(nil)
	ts.Config.Handler = e.srv
	ts.StartTLS()
	t.Cleanup(ts.Close)
	p := newPerson(t, ts.URL)
	p.c.Transport = ts.Client().Transport
	pg := p.login(testToken, "/")
	if pg.status != 303 || !sessionCookie(t, pg).Secure {
		t.Fatalf("login over TLS = %d, cookie %+v", pg.status, sessionCookie(t, pg))
	}
}

// sessionCookie is the session cookie a page set.
func sessionCookie(t *testing.T, pg page) *http.Cookie {
	t.Helper()
	for _, c := range (&http.Response{Header: pg.header}).Cookies() {
		if c.Name == "fenced_session" {
			return c
		}
	}
	t.Fatalf("no session cookie set (%d)", pg.status)
	return nil
}

// TestLoginNextStaysOnSite: the page to go to after login is followed only
// when it is a path of this site; anything a browser could read as another
// host — "/\t/evil.example" is "//evil.example" to a browser — or
// anything odd goes to "/".
func TestLoginNextStaysOnSite(t *testing.T) {
	t.Parallel()
	e := setupWith(t, []string{testToken}, dashboard.Options{})
	// login posts the form and reads the Location as sent (a client would
	// refuse to parse some of the bad ones).
	login := func(next string) (int, string) {
		form := url.Values{"token": {testToken}, "next": {next}}
		req, _ := http.NewRequest("POST", e.url+"/login", strings.NewReader(form.Encode()))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		req.Header.Set("Sec-Fetch-Site", "same-origin")
		resp, err := http.DefaultTransport.RoundTrip(req)
		if err != nil {
			return 0, err.Error() // a header no client would take
		}
		resp.Body.Close()
		return resp.StatusCode, resp.Header.Get("Location")
	}
	for _, next := range []string{
		"//evil.example/", "///evil.example", "/\\evil.example", "\\/evil.example", "/\\/evil.example",
		"/\t/evil.example", "/\n/evil.example", "/\r\n/evil.example", "\t//evil.example", "/\x00/evil.example",
		"/ /evil.example", " /jobs", "/jobs ", "/\x7f/evil.example", "/\u00a0/evil.example", "/\u3000/evil.example",
		"/%2F/evil.example", "/%2f%2fevil.example", "/%5Cevil.example", "/%09/evil.example", "/%0a/evil.example",
		"/%", "/%zz", "http://evil.example/", "https:evil.example", "javascript:alert(1)", "evil.example",
		"", "jobs", "./jobs", "?next=/", "#x", "/\u2028/evil.example", "/\xff",
	} {
		if status, location := login(next); status != 303 || location != "/" {
			t.Errorf("login with next=%q: %d to %q, want /", next, status, location)
		}
		form := newPerson(t, e.url).get("/login?next=" + url.QueryEscape(next))
		if m := hiddenField.FindAllStringSubmatch(form.body, -1); len(m) == 0 || m[len(m)-1][1] != "next" || m[len(m)-1][2] != "/" {
			t.Errorf("the login form of next=%q carries %q", next, m)
		}
	}
	for _, next := range []string{"/", "/jobs?state=failed&queue=mail", "/jobs/12", "/charts?queue=q%20x", "/jobs?before=9#top"} {
		if status, location := login(next); status != 303 || location != next {
			t.Errorf("login with next=%q: %d to %q", next, status, location)
		}
	}
}
