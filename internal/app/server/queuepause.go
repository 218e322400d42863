package server

import (
	"net/http"

	"github.com/fenced/fenced"
	"github.com/fenced/fenced/internal/lib/wire"
)

// The routes of paused queues (docs/design.md, "Pausing a queue"): a
// paused queue's claims, long polls included, return no job; running jobs
// and enqueues are not affected.

// queuePauseRequest is the optional body of a pause or resume: nothing.
type queuePauseRequest struct{}

// pauseReply is the state of one queue after a pause or a resume:
// paused_at is the time of its pause, absent when it is not paused;
// changed tells whether the call changed it (false: it was paused already,
// or not paused).
type pauseReply struct {
	Queue    string    `json:"queue"`
	Paused   bool      `json:"paused"`
	PausedAt wire.Time `json:"paused_at,omitzero"`
	Changed  bool      `json:"changed"`
	DBTime   wire.Time `json:"db_time,omitzero"`
}

// pausesReply is the list of paused queues.
type pausesReply struct {
	Pauses []fenced.QueuePause `json:"pauses"`
	DBTime wire.Time           `json:"db_time,omitzero"`
}

// pauseQueue: POST /v1/queues/{queue}/pause → {queue, "paused": true,
// paused_at, changed}. Pausing a paused queue keeps its first pause
// (changed false).
func (s *Server) pauseQueue(r *http.Request) (*reply, error) {
	if err := decodeBody(r, &queuePauseRequest{}, true); err != nil {
		return nil, err
	}
	p, changed, err := s.c.PauseQueue(r.Context(), r.PathValue("queue"))
	if err != nil {
		return nil, err
	}
	at := s.dbNow(r.Context())
	return ok(pauseReply{p.Queue, true, wire.Time(p.PausedAt), changed, wire.Time(at)}, at), nil
}

// resumeQueue: POST /v1/queues/{queue}/resume → {queue, "paused": false,
// changed}: changed is false when the queue was not paused.
func (s *Server) resumeQueue(r *http.Request) (*reply, error) {
	if err := decodeBody(r, &queuePauseRequest{}, true); err != nil {
		return nil, err
	}
	queue := r.PathValue("queue")
	resumed, err := s.c.ResumeQueue(r.Context(), queue)
	if err != nil {
		return nil, err
	}
	at := s.dbNow(r.Context())
	return ok(pauseReply{Queue: queue, Changed: resumed, DBTime: wire.Time(at)}, at), nil
}

// listQueuePauses: GET /v1/pauses → {"pauses": [{queue, paused_at}, …]}
// by queue.
func (s *Server) listQueuePauses(r *http.Request) (*reply, error) {
	ps, err := s.c.ListQueuePauses(r.Context())
	if err != nil {
		return nil, err
	}
	at := s.dbNow(r.Context())
	return ok(pausesReply{wire.List(ps), wire.Time(at)}, at), nil
}
