package server

import (
	"context"
	"time"
)

// What db_time (and X-Fenced-DB-Time) is on each route. It is always a
// reading of the database clock, the clock every expiry is judged by, never
// the server's own:
//
//   - lease acquire, renew, release, get, list: the reading the deciding
//     statement made (Lease.DecidedAt; a new expiry is db_time + ttl);
//   - enqueue, claim (when it returns jobs), cancel, job get, job list
//     (when not empty): the reading of the statement that returned the
//     jobs (Job.DecidedAt);
//   - heartbeat: the new lease expiry minus lease_ms, the reading the
//     extension was computed from; for a current attempt whose row its own
//     transaction held (not extended this time), the reading of the read
//     that found it current;
//   - complete, fail, snooze: the reading the ending statement recorded the
//     end at (the attempt's ended_at in GET /v1/jobs/{id}, and the base of
//     a retry's or a snooze's run_at); progress: the reading the statement
//     stored it at. One round trip: the statement returns it;
//   - stale_fence on heartbeat, complete, fail, snooze and progress: the
//     reading of the read that diagnosed the attempt as stale (the driver
//     makes it anyway; the server reads nothing more);
//   - resource write and read, an empty claim or list, /healthz, and the
//     other errors the database decided (lease_held, stale_fence of a lease
//     or resource, conflict, not_found): the library returns no reading
//     there, so the server reads the database clock right after the
//     decision. It is then an upper bound: the decision was made at or
//     before it;
//   - /metrics: a reading taken just before the job counts are read.
//
// Answers the server gives without asking the database (400, 401, 403,
// 405, 413, 415, unknown routes) carry none: nothing was decided at a
// database time, and reading the database clock for requests that may not
// even be authenticated would let anyone load the database.

// dbNow reads the database clock, or returns the zero time when it cannot
// (the backend has no clock read — driver.Clock — or the read failed; the
// answer then carries no database time, header or db_time, rather than the
// server's own).
func (s *Server) dbNow(ctx context.Context) time.Time {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Second)
	defer cancel()
	t, err := s.c.DatabaseTime(ctx)
	if err != nil {
		return time.Time{}
	}
	return t.UTC()
}

// listTime is the database time of a list reply: the reading of the
// statement that read the first item (decided), or, for an empty list, one
// read now.
func (s *Server) listTime(ctx context.Context, n int, decided func() time.Time) time.Time {
	if n > 0 {
		return decided().UTC()
	}
	return s.dbNow(ctx)
}
