package chaos

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/fenced/fenced"
	"github.com/fenced/fenced/internal/test/linmodel"
)

// singleton is the lease workload of one worker process: singleton tasks
// under leases chaos-0 … chaos-(n-1). It picks a lease, acquires it, and
// while it believes it holds it, renews it, bumps the lease's counter in a
// fenced transaction and writes the lease's resource; now and then it
// releases it or lets it lapse, and it reads the lease and the resource.
// Every call is recorded with its outcome for the linearizability check.
// It never checks the clock to decide whether it still holds a lease: a
// pause past the TTL makes it write with a fence that was taken over.
type singleton struct {
	c      *client
	d      *dialect
	rec    *recorder
	owner  string
	leases int
	ttl    time.Duration
	rng    *rand.Rand
	writes int
}

// callTimeout bounds one call; a call cut short has an unknown outcome.
const callTimeout = 5 * time.Second

func leaseName(i int) string { return fmt.Sprintf("chaos-%d", i) }

// resourceKey is the resource written under lease name.
func resourceKey(name string) string { return "res-" + name }

func (s *singleton) run(ctx context.Context) {
	for ctx.Err() == nil {
		name := leaseName(s.rng.IntN(s.leases))
		switch s.rng.IntN(6) {
		case 0:
			s.read(name)
		case 1:
			s.get(name)
		default:
			if l := s.acquire(name); l != nil {
				s.hold(ctx, *l)
			}
		}
		nap(ctx, time.Duration(5+s.rng.IntN(30))*time.Millisecond)
	}
}

// hold works under l for a few steps, then releases it or lets it lapse.
func (s *singleton) hold(ctx context.Context, l fenced.Lease) {
	for steps := 1 + s.rng.IntN(8); steps > 0 && ctx.Err() == nil; steps-- {
		var out linmodel.Output
		switch s.rng.IntN(3) {
		case 0:
			var r *fenced.Lease
			if r, out = s.renew(l); r != nil {
				l = *r
			}
		case 1:
			out = s.tx(l)
		default:
			out = s.write(l)
		}
		if out.Result == linmodel.Stale {
			return // taken over: this worker knows it no longer holds it
		}
		nap(ctx, time.Duration(5+s.rng.IntN(40))*time.Millisecond)
	}
	if s.rng.IntN(3) > 0 {
		s.release(l)
	} // else: let it lapse, and be taken over after its expiry
}

// do records one call: its input before, its outcome after.
func (s *singleton) do(in linmodel.Input, f func(context.Context) (linmodel.Output, error)) linmodel.Output {
	ctx, cancel := context.WithTimeout(context.Background(), callTimeout)
	defer cancel()
	id := s.rec.call(in)
	out, err := f(ctx)
	if err != nil {
		out = errOutput(err)
	}
	s.rec.ret(id, out, err)
	return out
}

// errOutput classifies an error: the typed refusals are definite outcomes;
// anything else (a lost connection, a restarting server, a timeout) leaves
// the outcome unknown: the statement may or may not have committed.
func errOutput(err error) linmodel.Output {
	var stale *fenced.StaleError
	var held *fenced.HeldError
	switch {
	case errors.As(err, &stale):
		return linmodel.Output{Result: linmodel.Stale, Fence: stale.Fence, CurrentFence: stale.CurrentFence,
			CurrentOwner: stale.CurrentOwner, Reason: stale.Reason}
	case errors.As(err, &held):
		return linmodel.Output{Result: linmodel.Held, Owner: held.Owner, Fence: held.Fence, ExpiresAt: held.ExpiresAt.UnixMicro()}
	case errors.Is(err, fenced.ErrNotFound):
		return linmodel.Output{Result: linmodel.NotFound}
	}
	return linmodel.Output{Result: linmodel.Unknown}
}

func leaseOutput(l *fenced.Lease) linmodel.Output {
	return linmodel.Output{Result: linmodel.OK, Owner: l.Owner, Fence: l.Fence, ExpiresAt: l.ExpiresAt.UnixMicro(),
		DecidedAt: l.DecidedAt.UnixMicro(), Held: l.Held, Released: l.Released}
}

func (s *singleton) acquire(name string) *fenced.Lease {
	var got *fenced.Lease
	s.do(linmodel.Input{Kind: linmodel.Acquire, Name: name, Owner: s.owner}, func(ctx context.Context) (linmodel.Output, error) {
		l, err := s.c.AcquireLease(ctx, name, s.owner, s.ttl)
		if err != nil {
			return linmodel.Output{}, err
		}
		got = l
		return leaseOutput(l), nil
	})
	return got
}

func (s *singleton) renew(l fenced.Lease) (*fenced.Lease, linmodel.Output) {
	var got *fenced.Lease
	out := s.do(linmodel.Input{Kind: linmodel.Renew, Name: l.Name, Owner: l.Owner, Fence: l.Fence},
		func(ctx context.Context) (linmodel.Output, error) {
			r, err := s.c.RenewLease(ctx, l, s.ttl)
			if err != nil {
				return linmodel.Output{}, err
			}
			got = r
			return leaseOutput(r), nil
		})
	return got, out
}

func (s *singleton) release(l fenced.Lease) {
	s.do(linmodel.Input{Kind: linmodel.Release, Name: l.Name, Owner: l.Owner, Fence: l.Fence},
		func(ctx context.Context) (linmodel.Output, error) {
			_, err := s.c.ReleaseLease(ctx, l)
			return linmodel.Output{Result: linmodel.OK}, err
		})
}

// The lease counter's statements, with ? placeholders (dialect.sql). The
// read after the bump, in its transaction, reads the row the bump wrote
// and still locks (MySQL has no UPDATE … RETURNING).
const (
	leaseCounterBumpSQL = `UPDATE chaos_lease_counters SET n = n + 1 WHERE name = ?`
	leaseCounterReadSQL = `SELECT n FROM chaos_lease_counters WHERE name = ?`
)

// tx bumps the lease's counter in a fenced transaction and reads it back.
func (s *singleton) tx(l fenced.Lease) linmodel.Output {
	return s.do(linmodel.Input{Kind: linmodel.Tx, Name: l.Name, Owner: l.Owner, Fence: l.Fence},
		func(ctx context.Context) (linmodel.Output, error) {
			var n int64
			err := s.c.LeaseTx(ctx, l, func(tx fenced.Tx) error {
				if _, err := tx.Exec(ctx, s.d.sql(leaseCounterBumpSQL), l.Name); err != nil {
					return err
				}
				return tx.QueryRow(ctx, s.d.sql(leaseCounterReadSQL), l.Name).Scan(&n)
			})
			return linmodel.Output{Result: linmodel.OK, Counter: n}, err
		})
}

// write stores a value no other write uses in the lease's resource.
func (s *singleton) write(l fenced.Lease) linmodel.Output {
	s.writes++
	value := fmt.Sprintf("%s/%d/%d", s.owner, l.Fence, s.writes)
	return s.do(linmodel.Input{Kind: linmodel.Write, Name: l.Name, Fence: l.Fence, Value: value},
		func(ctx context.Context) (linmodel.Output, error) {
			r, err := s.c.WriteResource(ctx, resourceKey(l.Name), []byte(value), l.Fence, fenced.WriteOptions{})
			if err != nil {
				return linmodel.Output{}, err
			}
			return linmodel.Output{Result: linmodel.OK, Fence: r.Fence, Version: r.Version}, nil
		})
}

func (s *singleton) read(name string) {
	s.do(linmodel.Input{Kind: linmodel.Read, Name: name}, func(ctx context.Context) (linmodel.Output, error) {
		r, err := s.c.ReadResource(ctx, resourceKey(name))
		if err != nil {
			return linmodel.Output{}, err
		}
		return linmodel.Output{Result: linmodel.OK, Value: string(r.Value), Fence: r.Fence, Version: r.Version}, nil
	})
}

// counter reads the lease's counter (outside any fenced transaction).
func (s *singleton) counter(name string) {
	s.do(linmodel.Input{Kind: linmodel.Counter, Name: name}, func(ctx context.Context) (linmodel.Output, error) {
		var n int64
		err := s.c.db.QueryRow(ctx, s.d.sql(leaseCounterReadSQL), name).Scan(&n)
		return linmodel.Output{Result: linmodel.OK, Counter: n}, err
	})
}

func (s *singleton) get(name string) {
	s.do(linmodel.Input{Kind: linmodel.Get, Name: name}, func(ctx context.Context) (linmodel.Output, error) {
		l, err := s.c.GetLease(ctx, name)
		if err != nil {
			return linmodel.Output{}, err
		}
		return leaseOutput(l), nil
	})
}

func nap(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
	case <-ctx.Done():
	}
}
