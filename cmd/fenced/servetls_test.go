package main

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// selfSigned writes a certificate for 127.0.0.1 and its key as PEM files
// and returns their paths and a pool that trusts the certificate.
func selfSigned(t *testing.T) (certFile, keyFile string, pool *x509.CertPool) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "fenced test"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)}, KeyUsage: x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	certFile, keyFile = filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	os.WriteFile(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600)
	os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}), 0o600)
	cert, _ := x509.ParseCertificate(der)
	pool = x509.NewCertPool()
	pool.AddCert(cert)
	return certFile, keyFile, pool
}

// login posts token to the dashboard's /login with the headers given and
// returns the answer, not following its redirect.
func (s *served) login(client *http.Client, token string, header ...string) *http.Response {
	s.t.Helper()
	req, _ := http.NewRequest("POST", s.base+"/login", strings.NewReader(url.Values{"token": {token}, "next": {"/"}}.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	c := *client
	c.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	res, err := c.Do(req)
	if err != nil {
		s.t.Fatalf("POST /login: %v", err)
	}
	res.Body.Close()
	return res
}

// sessionCookie is the session cookie of a login's answer.
func sessionCookie(t *testing.T, res *http.Response) *http.Cookie {
	t.Helper()
	for _, c := range res.Cookies() {
		if c.Name == "fenced_session" {
			return c
		}
	}
	t.Fatalf("login answered %d without a session cookie", res.StatusCode)
	return nil
}

// TestServeOverTLS: with --tls-cert and --tls-key fenced serve speaks
// HTTPS, says so in its first log line, and its session cookie is Secure;
// the two flags go together and a bad pair is refused before the database
// is opened.
func TestServeOverTLS(t *testing.T) {
	t.Parallel()
	certFile, keyFile, pool := selfSigned(t)
	c := newCLI(t, "")
	for _, args := range [][]string{
		{"--tls-cert", certFile},
		{"--tls-key", keyFile},
		{"--tls-cert", keyFile, "--tls-key", certFile},
		{"--tls-cert", filepath.Join(t.TempDir(), "missing.pem"), "--tls-key", keyFile},
	} {
		r := c.fails(exitUsage, append([]string{"serve"}, args...)...)
		contains(t, "stderr", r.stderr, "--tls-")
		if _, err := os.Stat(filepath.Join(c.dir, "fenced.db")); !os.IsNotExist(err) {
			t.Fatalf("serve %q: the database was opened before the TLS flags were checked", args)
		}
	}

	c.env = append(c.env, envTokens+"="+serveToken)
	s := c.serve("--no-maintenance", "--tls-cert", certFile, "--tls-key", keyFile)
	if !strings.HasPrefix(s.base, "https://127.0.0.1:") {
		t.Fatalf("fenced serve with TLS listens at %q", s.base)
	}
	client := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}
	req, _ := http.NewRequest("GET", s.base+"/v1/leases", nil)
	req.Header.Set("Authorization", "Bearer "+serveToken)
	res, err := client.Do(req)
	if err != nil || res.StatusCode != 200 {
		t.Fatalf("GET /v1/leases over TLS: %v %v", res, err)
	}
	res.Body.Close()
	login := s.login(client, serveToken)
	if login.StatusCode != http.StatusSeeOther || !sessionCookie(t, login).Secure {
		t.Fatalf("login over TLS = %d, cookie %+v; want a Secure cookie", login.StatusCode, sessionCookie(t, login))
	}
	s.stop()
}

// TestServeBehindTLSProxy: with --behind-tls-proxy the client address is
// the proxy's last X-Forwarded-For entry, so ten wrong logins of one
// client do not lock out another behind the same proxy, and the session
// cookie is Secure unless the proxy says X-Forwarded-Proto: http. Without
// the flag both headers are ignored.
func TestServeBehindTLSProxy(t *testing.T) {
	t.Parallel()
	for _, behind := range []bool{true, false} {
		c := newCLI(t, "")
		c.env = append(c.env, envTokens+"="+serveToken)
		args := []string{"--no-maintenance"}
		if behind {
			args = append(args, "--behind-tls-proxy")
		}
		s := c.serve(args...)
		first := s.login(http.DefaultClient, serveToken, "X-Forwarded-For", "203.0.113.6", "X-Forwarded-Proto", "https")
		if first.StatusCode != http.StatusSeeOther || sessionCookie(t, first).Secure != behind {
			t.Fatalf("behind a proxy %v, X-Forwarded-Proto https: login %d, cookie Secure %v", behind,
				first.StatusCode, sessionCookie(t, first).Secure)
		}
		for range 10 {
			if res := s.login(http.DefaultClient, "wrong-token-0123456789", "X-Forwarded-For", "203.0.113.7"); res.StatusCode != 401 {
				t.Fatalf("a wrong token = %d, want 401", res.StatusCode)
			}
		}
		if res := s.login(http.DefaultClient, serveToken, "X-Forwarded-For", "203.0.113.7"); res.StatusCode != 429 ||
			res.Header.Get("Retry-After") == "" {
			t.Fatalf("behind a proxy %v: the guessing client's right token = %d (Retry-After %q), want 429",
				behind, res.StatusCode, res.Header.Get("Retry-After"))
		}
		other := s.login(http.DefaultClient, serveToken, "X-Forwarded-For", "203.0.113.8", "X-Forwarded-Proto", "https")
		if !behind {
			if other.StatusCode != 429 {
				t.Fatalf("without --behind-tls-proxy another X-Forwarded-For = %d, want 429 (one address)", other.StatusCode)
			}
			s.stop()
			continue
		}
		if other.StatusCode != http.StatusSeeOther || !sessionCookie(t, other).Secure {
			t.Fatalf("another client behind the proxy = %d, want 303 with a Secure cookie", other.StatusCode)
		}
		if plain := s.login(http.DefaultClient, serveToken, "X-Forwarded-For", "203.0.113.9", "X-Forwarded-Proto", "http"); sessionCookie(t, plain).Secure {
			t.Fatal("X-Forwarded-Proto: http gave a Secure cookie")
		}
		s.stop()
		if !strings.Contains(s.stderr.String(), "proxy=") || !strings.Contains(s.stderr.String(), "remote=203.0.113.7") {
			t.Errorf("the log does not say the proxy is trusted, or not the client's address:\n%s", s.stderr)
		}
	}
}
