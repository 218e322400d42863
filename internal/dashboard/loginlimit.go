package dashboard

import (
	"net"
	"net/http"
	"sync"
	"time"
)

// Bounds of the guessing of tokens at /login.
const (
	// LoginFailures is how many refused logins a client address may make
	// in LoginWindow; past it /login answers 429 until the window ends,
	// whatever token it is given.
	LoginFailures = 10
	// LoginWindow is the window LoginFailures counts in.
	LoginWindow = time.Minute
	// loginClients bounds the addresses tracked at once; past it the
	// oldest windows are dropped (a flood of addresses costs memory no
	// more than this).
	loginClients = 10000
)

// loginLimiter counts refused logins per client address (the host of
// the connection's remote address), in fixed windows.
type loginLimiter struct {
	mu   sync.Mutex
	now  func() time.Time
	byIP map[string]*loginWindow
}

type loginWindow struct {
	start    time.Time
	failures int
}

func newLoginLimiter(now func() time.Time) *loginLimiter {
	return &loginLimiter{now: now, byIP: map[string]*loginWindow{}}
}

// host is the address a request's logins are counted under.
func host(r *http.Request) string {
	h, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		return r.RemoteAddr
	}
	return h
}

// blocked reports whether r's address has used up its refused logins in
// the current window, and when the window ends.
func (l *loginLimiter) blocked(r *http.Request) (bool, time.Time) {
	l.mu.Lock()
	defer l.mu.Unlock()
	w := l.byIP[host(r)]
	now := l.now()
	if w == nil || now.Sub(w.start) >= LoginWindow {
		return false, time.Time{}
	}
	return w.failures >= LoginFailures, w.start.Add(LoginWindow)
}

// refused counts a refused login of r's address.
func (l *loginLimiter) refused(r *http.Request) {
	l.mu.Lock()
	defer l.mu.Unlock()
	now := l.now()
	h := host(r)
	w := l.byIP[h]
	if w == nil || now.Sub(w.start) >= LoginWindow {
		if w == nil && len(l.byIP) >= loginClients {
			l.prune(now)
		}
		w = &loginWindow{start: now}
		l.byIP[h] = w
	}
	w.failures++
}

// prune drops the windows that ended, and if that is not enough, the
// oldest half of the rest.
func (l *loginLimiter) prune(now time.Time) {
	for h, w := range l.byIP {
		if now.Sub(w.start) >= LoginWindow {
			delete(l.byIP, h)
		}
	}
	if len(l.byIP) < loginClients {
		return
	}
	cut := now.Add(-LoginWindow / 2)
	for h, w := range l.byIP {
		if w.start.Before(cut) || len(l.byIP) >= loginClients {
			delete(l.byIP, h)
		}
	}
}
