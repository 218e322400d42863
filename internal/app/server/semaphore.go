package server

import (
	"errors"
	"net/http"
	"time"

	"github.com/fenced/fenced"
	"github.com/fenced/fenced/internal/lib/wire"
)

// The semaphore routes mirror the lease routes, with the number of slots
// on acquire: POST /v1/semaphores/{name}/acquire|renew|release,
// GET /v1/semaphores/{name} and GET /v1/semaphores. A refused acquire is
// 409 lease_held (a lease is a semaphore of one slot) naming the holder
// whose grant runs out first, with "slots".

// slotReply is a slot grant with the database time it was decided at.
type slotReply struct {
	fenced.Slot
	DBTime wire.Time `json:"db_time,omitzero"`
}

// MarshalJSON encodes the grant's fields, then db_time.
func (s slotReply) MarshalJSON() ([]byte, error) { return wire.Merge(s.Slot, dbTimeOf(s.DBTime)) }

type acquireSlotRequest struct {
	Owner string `json:"owner"`
	Slots *int   `json:"slots"`  // required
	TTLMs *int64 `json:"ttl_ms"` // default 30000
}

// acquireSlot: POST /v1/semaphores/{name}/acquire {owner, slots, ttl_ms} →
// the grant; 409 lease_held when every slot is held.
func (s *Server) acquireSlot(r *http.Request) (*reply, error) {
	var req acquireSlotRequest
	if err := decodeBody(r, &req, false); err != nil {
		return nil, err
	}
	slots, err := required("slots", req.Slots)
	if err != nil {
		return nil, err
	}
	ttl, err := millis("ttl_ms", req.TTLMs, defaultLeaseTTL, fenced.MinTTL, fenced.MaxTTL)
	if err != nil {
		return nil, err
	}
	g, err := s.c.AcquireSlot(r.Context(), r.PathValue("name"), req.Owner, slots, ttl)
	switch {
	case err == nil:
		s.metrics.slotAcquires.WithLabelValues("acquired").Inc()
	case errors.Is(err, fenced.ErrHeld):
		s.metrics.slotAcquires.WithLabelValues("held").Inc()
		return nil, err
	default:
		return nil, err
	}
	return ok(slotReply{*g, wire.Time(g.DecidedAt)}, g.DecidedAt), nil
}

// renewSlot: POST /v1/semaphores/{name}/renew {owner, fence, ttl_ms} → the
// grant; 409 stale_fence once it is no longer current.
func (s *Server) renewSlot(r *http.Request) (*reply, error) {
	var req renewRequest
	if err := decodeBody(r, &req, false); err != nil {
		return nil, err
	}
	fence, err := required("fence", req.Fence)
	if err != nil {
		return nil, err
	}
	ttl, err := millis("ttl_ms", req.TTLMs, defaultLeaseTTL, fenced.MinTTL, fenced.MaxTTL)
	if err != nil {
		return nil, err
	}
	g, err := s.c.RenewSlot(r.Context(), fenced.Slot{Name: r.PathValue("name"), Owner: req.Owner, Fence: fence}, ttl)
	if err != nil {
		return nil, semaphoreNotFound(r, err)
	}
	return ok(slotReply{*g, wire.Time(g.DecidedAt)}, g.DecidedAt), nil
}

// releaseSlot: POST /v1/semaphores/{name}/release {owner, fence} → the
// released grant; releasing it again succeeds; 409 stale_fence after a
// takeover of its slot.
func (s *Server) releaseSlot(r *http.Request) (*reply, error) {
	var req releaseRequest
	if err := decodeBody(r, &req, false); err != nil {
		return nil, err
	}
	fence, err := required("fence", req.Fence)
	if err != nil {
		return nil, err
	}
	g, err := s.c.ReleaseSlot(r.Context(), fenced.Slot{Name: r.PathValue("name"), Owner: req.Owner, Fence: fence})
	if err != nil {
		return nil, semaphoreNotFound(r, err)
	}
	return ok(slotReply{*g, wire.Time(g.DecidedAt)}, g.DecidedAt), nil
}

// semaphoreReply is a semaphore with the database time it was read at.
type semaphoreReply struct {
	fenced.Semaphore
	DBTime wire.Time `json:"db_time,omitzero"`
}

// getSemaphore: GET /v1/semaphores/{name} → the semaphore and its holders
// by the database clock.
func (s *Server) getSemaphore(r *http.Request) (*reply, error) {
	sem, err := s.c.GetSemaphore(r.Context(), r.PathValue("name"))
	if err != nil {
		return nil, semaphoreNotFound(r, err)
	}
	return ok(semaphoreReply{*sem, wire.Time(sem.DecidedAt)}, sem.DecidedAt), nil
}

// semaphoresReply is every semaphore, by name.
type semaphoresReply struct {
	Semaphores []*fenced.Semaphore `json:"semaphores"`
	DBTime     wire.Time           `json:"db_time,omitzero"`
}

// listSemaphores: GET /v1/semaphores → {"semaphores": [...]}.
func (s *Server) listSemaphores(r *http.Request) (*reply, error) {
	ss, err := s.c.ListSemaphores(r.Context())
	if err != nil {
		return nil, err
	}
	t := s.listTime(r.Context(), len(ss), func() time.Time { return ss[0].DecidedAt })
	return ok(semaphoresReply{wire.List(ss), wire.Time(t)}, t), nil
}

// semaphoreNotFound names the semaphore in a not-found.
func semaphoreNotFound(r *http.Request, err error) error { return namedNotFound("semaphore", r, err) }
