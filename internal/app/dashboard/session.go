package dashboard

import (
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"net/http"
	"sync"
	"time"
)

// Sessions of the dashboard's browsers.
const (
	// DefaultSessionTTL is how long a session lasts after it is made (at
	// login, or at the first page of a server without tokens); then the
	// browser logs in again.
	DefaultSessionTTL = 12 * time.Hour
	// sessionCookie names the cookie that carries the session id.
	sessionCookie = "fenced_session"
	// maxSessions bounds the sessions kept: past it, the one closest to
	// its expiry is dropped to make room.
	maxSessions = 10000
)

// session is what the server keeps of one browser's session: the cookie
// carries only a random id, never a token.
type session struct {
	expires time.Time
	csrf    string // the token every form of the session posts back
}

// sessions maps the SHA-256 of a session id to its session.
type sessions struct {
	ttl    time.Duration
	now    func() time.Time
	secure func(*http.Request) bool // the request came over TLS: the cookie is Secure

	mu sync.Mutex
	m  map[[sha256.Size]byte]*session
}

func newSessions(ttl time.Duration, now func() time.Time, secure func(*http.Request) bool) *sessions {
	return &sessions{ttl: ttl, now: now, secure: secure, m: map[[sha256.Size]byte]*session{}}
}

// random returns 32 random bytes as unpadded base64url.
func random() string {
	b := make([]byte, 32)
	rand.Read(b) // never fails (crypto/rand panics rather)
	return base64.RawURLEncoding.EncodeToString(b)
}

// create makes a session and sets its cookie on w: HttpOnly,
// SameSite=Strict, Secure when r came over TLS (Options.Secure), for the
// session's life.
func (s *sessions) create(w http.ResponseWriter, r *http.Request) *session {
	id := random()
	sess := &session{expires: s.now().Add(s.ttl), csrf: random()}
	s.mu.Lock()
	s.prune()
	s.m[sha256.Sum256([]byte(id))] = sess
	s.mu.Unlock()
	http.SetCookie(w, &http.Cookie{Name: sessionCookie, Value: id, Path: "/", HttpOnly: true,
		Secure: s.secure(r), SameSite: http.SameSiteStrictMode, Expires: sess.expires,
		MaxAge: int(s.ttl / time.Second)})
	return sess
}

// prune drops expired sessions and, at maxSessions, the one that expires
// first. The caller holds mu.
func (s *sessions) prune() {
	now := s.now()
	var first [sha256.Size]byte
	var firstAt time.Time
	for k, v := range s.m {
		if !now.Before(v.expires) {
			delete(s.m, k)
		} else if firstAt.IsZero() || v.expires.Before(firstAt) {
			first, firstAt = k, v.expires
		}
	}
	if len(s.m) >= maxSessions {
		delete(s.m, first)
	}
}

// get returns r's session, or nil when it has none that is unexpired.
func (s *sessions) get(r *http.Request) *session {
	c, err := r.Cookie(sessionCookie)
	if err != nil || c.Value == "" {
		return nil
	}
	k := sha256.Sum256([]byte(c.Value))
	s.mu.Lock()
	defer s.mu.Unlock()
	sess := s.m[k]
	if sess == nil {
		return nil
	}
	if !s.now().Before(sess.expires) {
		delete(s.m, k)
		return nil
	}
	return sess
}

// end forgets r's session and clears its cookie on w.
func (s *sessions) end(w http.ResponseWriter, r *http.Request) {
	if c, err := r.Cookie(sessionCookie); err == nil {
		s.mu.Lock()
		delete(s.m, sha256.Sum256([]byte(c.Value)))
		s.mu.Unlock()
	}
	http.SetCookie(w, &http.Cookie{Name: sessionCookie, Value: "", Path: "/", HttpOnly: true,
		Secure: s.secure(r), SameSite: http.SameSiteStrictMode, MaxAge: -1})
}

// checkCSRF reports whether the form of r carries the session's CSRF
// token (compared in constant time).
func (sess *session) checkCSRF(r *http.Request) bool {
	got := r.PostFormValue("csrf")
	return sess != nil && got != "" && subtle.ConstantTimeCompare([]byte(got), []byte(sess.csrf)) == 1
}
