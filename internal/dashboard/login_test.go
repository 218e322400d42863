package dashboard_test

import (
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/fenced/fenced/internal/dashboard"
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
	var log syncBuffer
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

// TestLoginGuessesAreBounded: after LoginFailures refused logins from one
// address within LoginWindow, even the right token is refused (429 with
// Retry-After) until the window ends; then it logs in.
func TestLoginGuessesAreBounded(t *testing.T) {
	t.Parallel()
	clock := &fakeClock{t: time.Now()}
	e := setupWith(t, []string{testToken}, dashboard.Options{Now: clock.now})
	p := newPerson(t, e.url)
	for i := range dashboard.LoginFailures {
		if pg := p.login("wrong-token-wrong-token", "/"); pg.status != 401 {
			t.Fatalf("wrong token %d = %d, want 401", i+1, pg.status)
		}
	}
	pg := p.login(testToken, "/")
	if pg.status != 429 || pg.header.Get("Retry-After") == "" || !strings.Contains(pg.body, "Too many refused logins") {
		t.Fatalf("the right token after %d refusals = %d (Retry-After %q):\n%s", dashboard.LoginFailures,
			pg.status, pg.header.Get("Retry-After"), pg.body)
	}
	clock.advance(dashboard.LoginWindow)
	if pg := p.login(testToken, "/jobs"); pg.status != 303 || pg.location != "/jobs" {
		t.Fatalf("the right token after the window = %d %q", pg.status, pg.location)
	}
}
