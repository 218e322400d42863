package server

import (
	"context"
	"errors"
	"net/http"
	"time"

	"github.com/fenced/fenced"
	"github.com/fenced/fenced/internal/lib/wire"
)

// healthReply says the database answered, and its clock.
type healthReply struct {
	Status string    `json:"status"`
	DBTime wire.Time `json:"db_time,omitzero"`
}

// health: GET /healthz → 200 {"status": "ok"} once the database answers
// (within 2s), else 503 unavailable. Open without a token. The question is
// the database clock read, or, on a backend without one (CapClock), a
// lease read: any answer from it will do.
func (s *Server) health(r *http.Request) (*reply, error) {
	ctx, cancel := context.WithTimeout(r.Context(), 2*time.Second)
	defer cancel()
	var t time.Time
	var err error
	if s.c.Supports(fenced.CapClock) {
		t, err = s.c.DatabaseTime(ctx)
	} else if _, err = s.c.GetLease(ctx, "fenced:healthz"); errors.Is(err, fenced.ErrNotFound) {
		err = nil
	}
	if err != nil {
		s.log.Warn("health check failed", "err", s.cfg.Redact(err.Error()))
		return nil, newError(http.StatusServiceUnavailable, codeUnavailable, "the database does not answer")
	}
	return ok(healthReply{"ok", wire.Time(t)}, t), nil
}
