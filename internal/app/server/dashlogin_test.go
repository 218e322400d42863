package server

import (
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/fenced/fenced/internal/test/testdb"
)

// TestDashboardLogin: with tokens and DashboardLogin, a dashboard path
// reaches the dashboard without a bearer token (it runs its own login),
// while the API still wants one; without DashboardLogin the dashboard
// wants the bearer token too. CheckToken checks a token as the bearer
// check does.
func TestDashboardLogin(t *testing.T) {
	t.Parallel()
	dash := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusTeapot) })
	for _, login := range []bool{true, false} {
		e := setup(t, testdb.SQLite(t), Config{Tokens: []string{tokenA}, Dashboard: dash, DashboardLogin: login})
		e.token = ""
		r, err := e.send("GET", "/jobs", nil)
		if err != nil {
			t.Fatal(err)
		}
		if want := map[bool]int{true: http.StatusTeapot, false: http.StatusUnauthorized}[login]; r.status != want {
			t.Fatalf("DashboardLogin %v: GET /jobs without a token = %d, want %d", login, r.status, want)
		}
		e.fails(http.StatusUnauthorized, codeUnauthorized, "GET", "/v1/jobs", nil)
		// A cross-site form post is refused before the dashboard sees it.
		r, _ = e.send("POST", "/act", nil, "Sec-Fetch-Site", "cross-site")
		if r.status != http.StatusForbidden && r.status != http.StatusUnauthorized {
			t.Fatalf("cross-site POST /act = %d", r.status)
		}
		req := httptest.NewRequest("POST", "/login", nil)
		valid := func(token string) bool { ok, _ := e.srv.CheckToken(req, token); return ok }
		if !valid(tokenA) || valid(tokenA+"x") || valid("") || !e.srv.TokensSet() {
			t.Fatal("CheckToken or TokensSet is wrong")
		}
	}
	e := setup(t, testdb.SQLite(t), Config{Dashboard: dash, DashboardLogin: true})
	if ok, _ := e.srv.CheckToken(httptest.NewRequest("POST", "/login", nil), ""); ok || e.srv.TokensSet() {
		t.Fatal("a server without tokens has tokens")
	}
}
