package dashboard

import (
	"fmt"
	"net/http"
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
// form again (401). After LoginFailures refused logins from one address
// within LoginWindow, every login from it is refused (429, no token
// checked) until the window ends. The token is neither kept nor logged.
func (h *Handler) login(w http.ResponseWriter, r *http.Request) {
	if h.o.CheckToken == nil {
		http.Redirect(w, r, "/", http.StatusSeeOther)
		return
	}
	next := localPath(r.PostFormValue("next"))
	if blocked, until := h.logins.blocked(r); blocked {
		h.log.Warn("dashboard login refused: too many refused logins", "remote", r.RemoteAddr)
		w.Header().Set("Retry-After", strconv.Itoa(int(max(until.Sub(h.o.Now()), time.Second).Seconds()+0.5)))
		h.render(w, r, http.StatusTooManyRequests, "login", &loginData{Next: next,
			Message: fmt.Sprintf("Too many refused logins from this address: try again after %s.", until.UTC().Format("15:04:05 UTC"))})
		return
	}
	if !h.o.CheckToken(strings.TrimSpace(r.PostFormValue("token"))) {
		h.logins.refused(r)
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

// localPath keeps a redirect on this site: a path starting with one "/"
// (not "//" or "/\", which browsers read as another host); else "/".
func localPath(p string) string {
	if !strings.HasPrefix(p, "/") || strings.HasPrefix(p, "//") || strings.HasPrefix(p, "/\\") {
		return "/"
	}
	return p
}
