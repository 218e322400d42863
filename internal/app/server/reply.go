package server

import (
	"bytes"
	"encoding/json"
	"log/slog"
	"net/http"
	"time"

	"github.com/fenced/fenced/fencedtype"
	"github.com/fenced/fenced/internal/lib/wire"
)

// HeaderDBTime is the response header carrying the database clock reading
// the answer was decided at, in fencedtype.TimeLayout (RFC 3339, UTC,
// microseconds), the form of every time in the bodies.
const HeaderDBTime = "X-Fenced-DB-Time"

// reply is a successful answer: status, JSON body, and the database time
// it was decided at (zero when none: the header is then left out).
type reply struct {
	status   int
	body     any
	dbTime   time.Time
	location string // for 201
}

// ok is a 200 reply.
func ok(body any, dbTime time.Time) *reply {
	return &reply{status: http.StatusOK, body: body, dbTime: dbTime}
}

// endpoint adapts a route's function to an http.Handler.
func (s *Server) endpoint(h func(*http.Request) (*reply, error)) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rep, err := h(r)
		if err != nil {
			s.writeError(w, r, s.errorFor(r, err))
			return
		}
		if rep.location != "" {
			w.Header().Set("Location", rep.location)
		}
		writeJSON(w, rep.status, rep.body, rep.dbTime)
	})
}

// writeJSON writes body as one line of JSON with its status and, when
// dbTime is set, the X-Fenced-DB-Time header.
func writeJSON(w http.ResponseWriter, status int, body any, dbTime time.Time) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(body); err != nil {
		// Every body is built from Go values that always encode.
		panic("server: encode reply: " + err.Error())
	}
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("Cache-Control", "no-store")
	h.Set("X-Content-Type-Options", "nosniff")
	if !dbTime.IsZero() {
		h.Set(HeaderDBTime, formatDBTime(dbTime))
	}
	w.WriteHeader(status)
	w.Write(buf.Bytes())
}

// formatDBTime is the header form of a database time.
func formatDBTime(t time.Time) string { return fencedtype.FormatTime(t) }

// recorder remembers the status written, for the request log and metrics.
type recorder struct {
	http.ResponseWriter
	status int
	bytes  int64
}

func (r *recorder) WriteHeader(code int) {
	if r.status == 0 {
		r.status = code
	}
	r.ResponseWriter.WriteHeader(code)
}

func (r *recorder) Write(b []byte) (int, error) {
	if r.status == 0 {
		r.status = http.StatusOK
	}
	n, err := r.ResponseWriter.Write(b)
	r.bytes += int64(n)
	return n, err
}

// Unwrap lets http.ResponseController reach the connection (a dashboard may
// flush).
func (r *recorder) Unwrap() http.ResponseWriter { return r.ResponseWriter }

// observe logs the request and records its latency. Only the method, the
// route, the path, the status, the size and the duration are logged: never
// a header (Authorization carries the token) or a body.
func (s *Server) observe(r *http.Request, rec *recorder, route string, d time.Duration) {
	status := rec.status
	if status == 0 {
		status = http.StatusOK
	}
	s.metrics.observe(route, status, d)
	s.log.LogAttrs(r.Context(), levelFor(status), "request",
		slog.String("method", r.Method), slog.String("route", route), slog.String("path", r.URL.Path),
		slog.Int("status", status), slog.Int64("bytes", rec.bytes), slog.Duration("duration", d))
}

// levelFor logs server failures as errors and everything else as info.
func levelFor(status int) slog.Level {
	if status >= 500 {
		return slog.LevelError
	}
	return slog.LevelInfo
}

// dbTime is the db_time member a reply that embeds a value adds to it
// through wire.Merge (absent when zero).
type dbTime struct {
	DBTime wire.Time `json:"db_time,omitzero"`
}

func dbTimeOf(t wire.Time) dbTime { return dbTime{t} }
