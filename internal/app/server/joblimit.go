package server

import (
	"net/http"

	"github.com/fenced/fenced"
	"github.com/fenced/fenced/internal/lib/wire"
)

// The routes of declared job limits (docs/design.md, "Concurrency limits
// and sequences"). A limit's scope is in its path: a queue's own, a queue
// and kind's, or a queue and concurrency key's.

// limitRequest is the body of a PUT of a limit. Absent numbers are 0: no
// limit from that field.
type limitRequest struct {
	PerKey int `json:"per_key"`
	Global int `json:"global"`
}

// limitReply is one limit as stored.
type limitReply struct {
	fenced.JobLimit
	DBTime wire.Time `json:"db_time,omitzero"`
}

// limitsReply is a list of limits.
type limitsReply struct {
	Limits []fenced.JobLimit `json:"limits"`
	DBTime wire.Time         `json:"db_time,omitzero"`
}

// limitScope is the scope a limit route's path names.
func limitScope(r *http.Request) fenced.JobLimit {
	return fenced.JobLimit{Queue: r.PathValue("queue"), Kind: r.PathValue("kind"), ConcurrencyKey: r.PathValue("key")}
}

// setJobLimit: PUT /v1/queues/{queue}/limit, …/kinds/{kind}/limit or
// …/keys/{key}/limit {per_key, global} → the limit as stored.
func (s *Server) setJobLimit(r *http.Request) (*reply, error) {
	var req limitRequest
	if err := decodeBody(r, &req, false); err != nil {
		return nil, err
	}
	l := limitScope(r)
	l.PerKey, l.Global = req.PerKey, req.Global
	got, err := s.c.SetJobLimit(r.Context(), l)
	if err != nil {
		return nil, err
	}
	at := s.dbNow(r.Context())
	return ok(limitReply{*got, wire.Time(at)}, at), nil
}

// limitDeletedReply names the scope whose limit was deleted.
type limitDeletedReply struct {
	Queue          string    `json:"queue"`
	Kind           string    `json:"kind"`
	ConcurrencyKey string    `json:"concurrency_key"`
	Deleted        bool      `json:"deleted"`
	DBTime         wire.Time `json:"db_time,omitzero"`
}

// deleteJobLimit: DELETE on a limit's path → {queue, kind,
// concurrency_key, "deleted": true}; 404 when none is declared for that
// scope.
func (s *Server) deleteJobLimit(r *http.Request) (*reply, error) {
	l := limitScope(r)
	if err := s.c.DeleteJobLimit(r.Context(), l.Queue, l.Kind, l.ConcurrencyKey); err != nil {
		return nil, err
	}
	at := s.dbNow(r.Context())
	return ok(limitDeletedReply{l.Queue, l.Kind, l.ConcurrencyKey, true, wire.Time(at)}, at), nil
}

// listJobLimits: GET /v1/limits (every queue) or GET
// /v1/queues/{queue}/limits → {"limits": […]} by queue, kind and key.
func (s *Server) listJobLimits(r *http.Request) (*reply, error) {
	ls, err := s.c.ListJobLimits(r.Context(), r.PathValue("queue"))
	if err != nil {
		return nil, err
	}
	at := s.dbNow(r.Context())
	return ok(limitsReply{wire.List(ls), wire.Time(at)}, at), nil
}
