package server

import (
	"errors"
	"net/http"
	"time"

	"github.com/fenced/fenced"
	"github.com/fenced/fenced/internal/lib/wire"
)

// defaultLeaseTTL is the ttl_ms of an acquire or renew that gives none.
const defaultLeaseTTL = 30 * time.Second

// leaseReply is a lease with the database time it was decided at.
type leaseReply struct {
	fenced.Lease
	DBTime wire.Time `json:"db_time,omitzero"`
}

// MarshalJSON encodes the lease's fields, then db_time (the Lease's own
// MarshalJSON, promoted, would leave db_time out).
func (l leaseReply) MarshalJSON() ([]byte, error) { return wire.Merge(l.Lease, dbTimeOf(l.DBTime)) }

type acquireRequest struct {
	Owner string `json:"owner"`
	TTLMs *int64 `json:"ttl_ms"` // default 30000
}

// acquire: POST /v1/leases/{name}/acquire {owner, ttl_ms} → the lease;
// 409 lease_held when another owner holds it.
func (s *Server) acquire(r *http.Request) (*reply, error) {
	var req acquireRequest
	if err := decodeBody(r, &req, false); err != nil {
		return nil, err
	}
	ttl, err := millis("ttl_ms", req.TTLMs, defaultLeaseTTL, fenced.MinTTL, fenced.MaxTTL)
	if err != nil {
		return nil, err
	}
	l, err := s.c.AcquireLease(r.Context(), r.PathValue("name"), req.Owner, ttl)
	switch {
	case err == nil:
		s.metrics.acquires.WithLabelValues("acquired").Inc()
	case errors.Is(err, fenced.ErrHeld):
		s.metrics.acquires.WithLabelValues("held").Inc()
		return nil, err
	default:
		return nil, err
	}
	return ok(leaseReply{*l, wire.Time(l.DecidedAt)}, l.DecidedAt), nil
}

type renewRequest struct {
	Owner string `json:"owner"`
	Fence *int64 `json:"fence"`
	TTLMs *int64 `json:"ttl_ms"` // default 30000
}

// renew: POST /v1/leases/{name}/renew {owner, fence, ttl_ms} → the lease;
// 409 stale_fence once the generation is no longer current.
func (s *Server) renew(r *http.Request) (*reply, error) {
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
	l, err := s.c.RenewLease(r.Context(), fenced.Lease{Name: r.PathValue("name"), Owner: req.Owner, Fence: fence}, ttl)
	if err != nil {
		return nil, leaseNotFound(r, err)
	}
	return ok(leaseReply{*l, wire.Time(l.DecidedAt)}, l.DecidedAt), nil
}

type releaseRequest struct {
	Owner string `json:"owner"`
	Fence *int64 `json:"fence"`
}

// release: POST /v1/leases/{name}/release {owner, fence} → the released
// generation (held false, expires_at when it stopped being held); releasing
// it again succeeds; 409 stale_fence after a takeover.
func (s *Server) release(r *http.Request) (*reply, error) {
	var req releaseRequest
	if err := decodeBody(r, &req, false); err != nil {
		return nil, err
	}
	fence, err := required("fence", req.Fence)
	if err != nil {
		return nil, err
	}
	l, err := s.c.ReleaseLease(r.Context(), fenced.Lease{Name: r.PathValue("name"), Owner: req.Owner, Fence: fence})
	if err != nil {
		return nil, leaseNotFound(r, err)
	}
	return ok(leaseReply{*l, wire.Time(l.DecidedAt)}, l.DecidedAt), nil
}

// getLease: GET /v1/leases/{name} → the lease, held by the database clock.
func (s *Server) getLease(r *http.Request) (*reply, error) {
	l, err := s.c.GetLease(r.Context(), r.PathValue("name"))
	if err != nil {
		return nil, leaseNotFound(r, err)
	}
	return ok(leaseReply{*l, wire.Time(l.DecidedAt)}, l.DecidedAt), nil
}

// leasesReply is every lease, by name.
type leasesReply struct {
	Leases []*fenced.Lease `json:"leases"`
	DBTime wire.Time       `json:"db_time,omitzero"`
}

// listLeases: GET /v1/leases → {"leases": [...]}.
func (s *Server) listLeases(r *http.Request) (*reply, error) {
	ls, err := s.c.ListLeases(r.Context())
	if err != nil {
		return nil, err
	}
	t := s.listTime(r.Context(), len(ls), func() time.Time { return ls[0].DecidedAt })
	return ok(leasesReply{wire.List(ls), wire.Time(t)}, t), nil
}

// leaseNotFound names the lease in a not-found.
func leaseNotFound(r *http.Request, err error) error { return namedNotFound("lease", r, err) }

// namedNotFound names what the route's {name} is (a lease, a semaphore) in
// a not-found; other errors pass unchanged.
func namedNotFound(what string, r *http.Request, err error) error {
	if errors.Is(err, fenced.ErrNotFound) {
		return notFound(what, r.PathValue("name"))
	}
	return err
}
