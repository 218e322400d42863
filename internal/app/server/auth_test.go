package server

import (
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/fenced/fenced/internal/test/logbuf"

	"github.com/fenced/fenced/internal/test/testdb"
)

const (
	tokenA = "token-a-0123456789abcdef"
	tokenB = "token-b-fedcba9876543210"
)

func TestAuthWithTokens(t *testing.T) {
	t.Parallel()
	var logs logbuf.Buffer
	e := setup(t, testdb.SQLite(t), Config{Tokens: []string{tokenA, tokenB},
		Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	acquire := "/v1/leases/x/acquire"
	body := map[string]any{"owner": "A"}

	e.token = ""
	r := e.fails(http.StatusUnauthorized, codeUnauthorized, "POST", acquire, body)
	if !strings.HasPrefix(r.header.Get("WWW-Authenticate"), "Bearer") {
		t.Fatalf("401 without WWW-Authenticate: %v", r.header)
	}
	e.fails(http.StatusUnauthorized, codeUnauthorized, "POST", acquire, body, "Authorization", "Bearer wrong-token-0123456789")
	e.fails(http.StatusUnauthorized, codeUnauthorized, "POST", acquire, body, "Authorization", "Bearer "+tokenA+"x")
	e.fails(http.StatusUnauthorized, codeUnauthorized, "POST", acquire, body, "Authorization", "Basic "+tokenA)
	e.fails(http.StatusUnauthorized, codeUnauthorized, "POST", acquire, body, "Authorization", tokenA)
	e.fails(http.StatusUnauthorized, codeUnauthorized, "GET", "/metrics", nil)
	e.fails(http.StatusUnauthorized, codeUnauthorized, "GET", "/v1/nope", nil) // no route map for strangers
	e.ok("GET", "/healthz", nil)                                               // open

	e.token = tokenA // each token works
	e.ok("POST", acquire, body)
	e.token = tokenB
	e.ok("GET", "/v1/leases/x", nil)
	if r := e.do("GET", "/metrics", nil); r.status != 200 {
		t.Fatalf("metrics with a token: %d", r.status)
	}
	e.ok("GET", "/v1/leases", nil, http.StatusOK)
	e.do("GET", "/v1/leases", nil, "Authorization", "bearer "+tokenA) // the scheme is case-insensitive

	t.Run("NonLoopbackClientsAreServedWithATokens", func(t *testing.T) {
		req := httptest.NewRequest("GET", "http://fenced.example.com/v1/leases", nil)
		req.RemoteAddr = "203.0.113.7:4000"
		req.Header.Set("Authorization", "Bearer "+tokenA)
		w := httptest.NewRecorder()
		e.srv.ServeHTTP(w, req)
		if w.Code != 200 {
			t.Fatalf("remote client with a token: %d %s", w.Code, w.Body)
		}
	})
	t.Run("TokensAreNeverLogged", func(t *testing.T) {
		out := logs.String()
		if strings.Contains(out, tokenA) || strings.Contains(out, tokenB) || strings.Contains(out, "Bearer") {
			t.Fatalf("a token is in the log:\n%s", out)
		}
		if !strings.Contains(out, `route="POST /v1/leases/{name}/acquire"`) || !strings.Contains(out, "status=401") {
			t.Fatalf("the log lacks the request lines:\n%s", out)
		}
	})
}

func TestAuthWithoutTokensServesLoopbackOnly(t *testing.T) {
	t.Parallel()
	e := setup(t, testdb.SQLite(t), Config{})
	e.ok("GET", "/v1/leases", nil)
	e.ok("GET", "/v1/leases", nil, http.StatusOK)
	for _, host := range []string{"localhost:8080", "127.0.0.1", "[::1]:80", "LOCALHOST."} {
		if r := e.do("GET", "/v1/leases", nil, "Host", host); r.status != 200 {
			t.Errorf("Host %s: %d %s", host, r.status, r.raw)
		}
	}
	// A page that rebinds its own name to 127.0.0.1 still sends that name.
	r := e.fails(http.StatusForbidden, codeForbidden, "GET", "/v1/leases", nil, "Host", "attacker.example:8080")
	if !strings.Contains(r.body["message"].(string), "loopback") {
		t.Fatalf("403 message: %s", r.raw)
	}
	e.fails(http.StatusForbidden, codeForbidden, "GET", "/v1/leases", nil, "Host", "10.0.0.1")

	req := httptest.NewRequest("GET", "http://127.0.0.1/v1/leases", nil)
	req.RemoteAddr = "203.0.113.7:4000"
	w := httptest.NewRecorder()
	e.srv.ServeHTTP(w, req)
	if w.Code != http.StatusForbidden || !strings.Contains(w.Body.String(), `"forbidden"`) {
		t.Fatalf("non-loopback client without tokens: %d %s", w.Code, w.Body)
	}
}

func TestCrossOriginBrowserRequestsAreRefused(t *testing.T) {
	t.Parallel()
	e := setup(t, testdb.SQLite(t), Config{})
	body := map[string]any{"owner": "A"}
	e.fails(http.StatusForbidden, codeForbidden, "POST", "/v1/leases/x/acquire", body, "Sec-Fetch-Site", "cross-site")
	e.fails(http.StatusForbidden, codeForbidden, "POST", "/v1/jobs/1/cancel", nil, "Origin", "https://attacker.example")
	e.ok("POST", "/v1/leases/x/acquire", body)
	if r := e.do("POST", "/v1/leases/x/acquire", body, "Sec-Fetch-Site", "same-origin"); r.status != 200 {
		t.Fatalf("same-origin: %d %s", r.status, r.raw)
	}
}

func TestCheckListen(t *testing.T) {
	t.Parallel()
	for _, addr := range []string{"127.0.0.1:8080", "127.1.2.3:0", "localhost:8080", "[::1]:8080"} {
		if err := CheckListen(addr, false); err != nil {
			t.Errorf("%s without tokens: %v", addr, err)
		}
	}
	for _, addr := range []string{":8080", "0.0.0.0:8080", "[::]:8080", "10.1.2.3:80", "fenced.example.com:80", "8080"} {
		err := CheckListen(addr, false)
		if err == nil {
			t.Errorf("%s without tokens: allowed", addr)
			continue
		}
		if addr != "8080" && (!strings.Contains(err.Error(), "without tokens") || !strings.Contains(err.Error(), "--tokens-file")) {
			t.Errorf("%s: message %q does not say why and how to fix it", addr, err)
		}
		if err := CheckListen(addr, true); err != nil {
			t.Errorf("%s with tokens: %v", addr, err)
		}
	}
}

func TestReadTokens(t *testing.T) {
	t.Parallel()
	got, err := ReadTokens(strings.NewReader("# ops team\n\n  " + tokenA + "  \n#" + tokenB + "\n" + tokenB + "\n"))
	if err != nil || len(got) != 2 || got[0] != tokenA || got[1] != tokenB {
		t.Fatalf("ReadTokens = %q, %v", got, err)
	}
	_, err = ReadTokens(strings.NewReader("# comment\nshort-secret\n"))
	if err == nil || !strings.Contains(err.Error(), "line 2") || strings.Contains(err.Error(), "short-secret") {
		t.Fatalf("a short token: %v (must name the line, never the token)", err)
	}
	if _, err := ReadTokens(strings.NewReader("with space in the token 123\n")); err == nil {
		t.Fatal("a token with spaces accepted")
	}
	got, err = SplitTokens(" " + tokenA + ",," + tokenB + " ")
	if err != nil || len(got) != 2 {
		t.Fatalf("SplitTokens = %q, %v", got, err)
	}
	if _, err := SplitTokens("tiny"); err == nil || strings.Contains(err.Error(), "tiny") {
		t.Fatalf("SplitTokens of a short token: %v", err)
	}
	if _, err := New(nil, Config{Tokens: []string{"tiny"}}); err == nil {
		t.Fatal("New accepted a short token")
	}
}

func TestTokenComparison(t *testing.T) {
	t.Parallel()
	a, err := newAuth([]string{tokenA, tokenB})
	if err != nil {
		t.Fatal(err)
	}
	for tok, want := range map[string]bool{tokenA: true, tokenB: true, "": false, tokenA[:20]: false, tokenA + tokenB: false} {
		if got := a.valid(tok); got != want {
			t.Errorf("valid(%q) = %v", tok, got)
		}
	}
}
