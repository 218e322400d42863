package dashboard

import (
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// loginData is the data of /login.
type loginData struct {
	Chrome
	Next    string // the page to go to once logged in
	Message string // why the last attempt was refused
}

// loginPage serves GET /login: a form that takes a token. Without tokens
// there is nothing to log in to: it sends the browser to the overview.
func (h *Handler) loginPage(w http.ResponseWriter, r *http.Request) {
	if h.o.CheckToken == nil {
		http.Redirect(w, r, "/", http.StatusSeeOther)
		return
	}
	h.render(w, r, http.StatusOK, "login", &loginData{Next: localPath(r.URL.Query().Get("next"))})
}

// login serves POST /login: a valid token (one of the server's, compared in
// constant time) starts a new session, whose cookie replaces any the
// browser had, and goes on to the page it came for; a wrong one shows the
// form again (401). A client that presented too many wrong tokens, here or
// to the API, is refused (429 with Retry-After, the token unchecked) until
// the server's bounds of guessing let it try again (Options.CheckToken).
// The token is neither kept nor logged.
func (h *Handler) login(w http.ResponseWriter, r *http.Request) {
	if h.o.CheckToken == nil {
		http.Redirect(w, r, "/", http.StatusSeeOther)
		return
	}
	next := localPath(r.PostFormValue("next"))
	ok, retry := h.o.CheckToken(r, strings.TrimSpace(r.PostFormValue("token")))
	if retry > 0 {
		h.log.Warn("dashboard login refused: too many wrong tokens", "remote", r.RemoteAddr)
		secs := strconv.FormatInt(int64(retry/time.Second), 10)
		w.Header().Set("Retry-After", secs)
		h.render(w, r, http.StatusTooManyRequests, "login", &loginData{Next: next,
			Message: "Too many wrong tokens from this address: try again in " + secs + " s."})
		return
	}
	if !ok {
		h.log.Warn("dashboard login refused", "remote", r.RemoteAddr)
		h.render(w, r, http.StatusUnauthorized, "login", &loginData{Next: next,
			Message: "That token is not one of this server's tokens."})
		return
	}
	h.sess.end(w, r)
	h.sess.create(w, r)
	h.log.Info("dashboard login", "remote", r.RemoteAddr)
	http.Redirect(w, r, next, http.StatusSeeOther)
}

// logout serves POST /logout: with the session's CSRF token, it ends the
// session and clears its cookie.
func (h *Handler) logout(w http.ResponseWriter, r *http.Request) {
	if !sessionOf(r).checkCSRF(r) {
		h.render(w, r, http.StatusForbidden, "error", &errorPage{Title: "Refused",
			Message: "The form did not carry this session's token."})
		return
	}
	h.sess.end(w, r)
	h.log.Info("dashboard logout", "remote", r.RemoteAddr)
	to := "/login"
	if h.o.CheckToken == nil {
		to = "/"
	}
	http.Redirect(w, r, to, http.StatusSeeOther)
}

// localPath keeps a redirect on this site: p if it is a path of this site
// (sameSitePath), else "/".
func localPath(p string) string {
	if !sameSitePath(p) {
		return "/"
	}
	return p
}

// sameSitePath reports whether p, given as the page to go to after login,
// can only lead to this site. Browsers drop tabs and newlines from a URL
// and read "\" as "/", so "/\t/evil.example" (a tab) or "/\evil.example" is
// "//evil.example", another host. p must be printable ASCII without
// spaces or backslashes, start with one "/" (not "//"), parse as a URL
// without a scheme, host or user, and its path must still start with one
// "/" and hold no control character once percent-decoded.
func sameSitePath(p string) bool {
	for i := range len(p) {
		if c := p[i]; c <= ' ' || c >= 0x7f || c == '\\' {
			return false
		}
	}
	if !strings.HasPrefix(p, "/") || strings.HasPrefix(p, "//") {
		return false
	}
	u, err := url.Parse(p)
	if err != nil || u.Scheme != "" || u.Host != "" || u.User != nil || u.Opaque != "" {
		return false
	}
	path, err := url.PathUnescape(u.EscapedPath())
	if err != nil || !strings.HasPrefix(path, "/") || strings.HasPrefix(path, "//") {
		return false
	}
	for _, c := range path {
		if c < ' ' || c == 0x7f || c == '\\' {
			return false
		}
	}
	return true
}
