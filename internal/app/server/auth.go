package server

import (
	"bufio"
	"crypto/sha256"
	"crypto/subtle"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// MinTokenLen is the shortest bearer token accepted: anything shorter can
// be guessed.
const MinTokenLen = 16

// auth checks bearer tokens. Tokens are kept as SHA-256 digests and a
// presented token is hashed and compared with every one of them in
// constant time, without stopping at a match, so neither the time nor the
// comparisons say which token matched or how long the tokens are.
type auth struct {
	digests [][sha256.Size]byte
}

func newAuth(tokens []string) (*auth, error) {
	a := &auth{}
	for i, t := range tokens {
		if err := validToken(t); err != nil {
			return nil, fmt.Errorf("token %d: %w", i+1, err)
		}
		a.digests = append(a.digests, sha256.Sum256([]byte(t)))
	}
	return a, nil
}

// validToken checks a token's form (never printing it).
func validToken(t string) error {
	if len(t) < MinTokenLen {
		return fmt.Errorf("is %d characters, the minimum is %d", len(t), MinTokenLen)
	}
	for _, c := range []byte(t) {
		if c <= ' ' || c >= 0x7f {
			return fmt.Errorf("has a space, control or non-ASCII character")
		}
	}
	return nil
}

func (a *auth) enabled() bool { return len(a.digests) > 0 }

// valid reports whether token is one of the tokens.
func (a *auth) valid(token string) bool {
	d := sha256.Sum256([]byte(token))
	match := 0
	for _, want := range a.digests {
		match |= subtle.ConstantTimeCompare(d[:], want[:])
	}
	return match == 1
}

// CheckToken checks a token that r presents (the dashboard's login) as a
// bearer token is checked: within the bounds of guessing (tokenlimit.go),
// then in constant time. ok reports whether it is one of the server's
// tokens (never when there are none); retry > 0 (whole seconds) says r's
// client may not present one for that long, and the token was not
// checked.
func (s *Server) CheckToken(r *http.Request, token string) (ok bool, retry time.Duration) {
	if !s.auth.enabled() {
		return false, 0
	}
	return s.checkToken(r, token)
}

// TokensSet reports whether the server has tokens (and so whether the
// dashboard must ask for one).
func (s *Server) TokensSet() bool { return s.auth.enabled() }

// authorize admits r or says why not. With tokens, r must carry one as
// "Authorization: Bearer TOKEN" (401 otherwise; 429 with Retry-After, the
// token unchecked, when r's client has presented too many wrong ones:
// tokenlimit.go). Without tokens only
// loopback is served: the client must connect from a loopback address and
// name a loopback host (403 otherwise; the Host check stops a web page
// that rebinds its own DNS name to 127.0.0.1 from reading the API).
func (s *Server) authorize(r *http.Request) *apiError {
	if !s.auth.enabled() {
		if !loopbackAddr(r.RemoteAddr) {
			return forbidden("this server has no tokens and serves loopback clients only")
		}
		if !loopbackHost(r.Host) {
			return forbidden("this server has no tokens and answers only requests to a loopback host " +
				"(localhost, 127.0.0.1, [::1]), not " + fmt.Sprintf("%q", r.Host))
		}
		return nil
	}
	scheme, token, found := strings.Cut(r.Header.Get("Authorization"), " ")
	if !found || !strings.EqualFold(scheme, "Bearer") {
		return newError(http.StatusUnauthorized, codeUnauthorized, "a bearer token is required: Authorization: Bearer TOKEN")
	}
	ok, retry := s.checkToken(r, strings.TrimSpace(token))
	if retry > 0 {
		e := newError(http.StatusTooManyRequests, codeTooManyRequests, fmt.Sprintf(
			"too many wrong tokens from this client address, or from all clients: the token was not checked; try again in %s s",
			retryAfter(retry)))
		e.retryAfter = retry
		return e
	}
	if !ok {
		return newError(http.StatusUnauthorized, codeUnauthorized, "the bearer token is not one of this server's tokens")
	}
	return nil
}

// retryAfter is a wait as the Retry-After header says it: whole seconds,
// rounded up, so that a client waiting that long never comes back early.
func retryAfter(d time.Duration) string {
	return strconv.FormatInt(int64((d+time.Second-1)/time.Second), 10)
}

// loopbackAddr reports whether a host:port address is on a loopback IP.
func loopbackAddr(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		host = addr
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// loopbackHost reports whether a Host header names this machine's
// loopback: localhost or a loopback IP, with or without a port. An absent
// Host (HTTP/1.0) is accepted: browsers always send one.
func loopbackHost(host string) bool {
	if host == "" {
		return true
	}
	if h, _, err := net.SplitHostPort(host); err == nil {
		host = h
	}
	host = strings.TrimSuffix(strings.Trim(host, "[]"), ".")
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// CheckListen refuses to serve addr without tokens unless it is a loopback
// address: 127.0.0.0/8, ::1 or localhost. An empty host (":8080"), 0.0.0.0,
// :: or any other name or address would let anyone who can reach it take
// leases, write resources and run jobs.
func CheckListen(addr string, haveTokens bool) error {
	if haveTokens {
		return nil
	}
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("listen address %q: %w", addr, err)
	}
	if host != "" && loopbackHost(host) {
		return nil
	}
	shown := host
	if shown == "" {
		shown = "every interface"
	}
	return fmt.Errorf("refusing to listen on %s (%s) without tokens: anyone who can reach it could take "+
		"leases, write resources and run jobs. Give tokens with --tokens-file FILE or FENCED_TOKENS, "+
		"or listen on a loopback address such as 127.0.0.1:8080", addr, shown)
}

// ReadTokens reads bearer tokens, one per line; blank lines and lines
// starting with # are skipped, surrounding space is trimmed. Errors name
// the line, never the token.
func ReadTokens(r io.Reader) ([]string, error) {
	var out []string
	sc := bufio.NewScanner(r)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		if err := validToken(line); err != nil {
			return nil, fmt.Errorf("line %d: token %w", n, err)
		}
		out = append(out, line)
	}
	return out, sc.Err()
}

// SplitTokens reads the comma-separated tokens of an environment variable;
// empty items are skipped.
func SplitTokens(s string) ([]string, error) {
	var out []string
	for i, t := range strings.Split(s, ",") {
		t = strings.TrimSpace(t)
		if t == "" {
			continue
		}
		if err := validToken(t); err != nil {
			return nil, fmt.Errorf("item %d: token %w", i+1, err)
		}
		out = append(out, t)
	}
	return out, nil
}
