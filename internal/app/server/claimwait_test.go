package server

import (
	"context"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/fenced/fenced"
	"github.com/fenced/fenced/driver"
	"github.com/fenced/fenced/internal/test/testdb"
)

// countingClaims counts the claim statements a server makes.
type countingClaims struct {
	sqlDriver
	claims atomic.Int64
}

func (d *countingClaims) ClaimJobs(ctx context.Context, p driver.ClaimJobsParams) ([]*fenced.Job, error) {
	d.claims.Add(1)
	return d.sqlDriver.ClaimJobs(ctx, p)
}

// DatabaseTime keeps the backend's clock read (driver.Clock), which the
// embedding would hide.
func (d *countingClaims) DatabaseTime(ctx context.Context) (time.Time, error) {
	return d.sqlDriver.(driver.Clock).DatabaseTime(ctx)
}

// setupCounting serves a fresh migrated SQLite database through a driver
// that counts claims.
func setupCounting(t *testing.T, cfg Config) (*env, *countingClaims) {
	t.Helper()
	ctx := context.Background()
	inner, err := fenced.OpenDriver(ctx, testdb.SQLite(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { inner.Close() })
	d := &countingClaims{sqlDriver: inner.(sqlDriver)}
	c := fenced.New(d, fenced.Config{})
	if _, err := c.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	srv, err := New(c, cfg)
	if err != nil {
		t.Fatal(err)
	}
	e := &env{t: t, c: c, srv: srv, ts: httptest.NewServer(srv)}
	t.Cleanup(func() { srv.Close(); e.ts.Close() })
	return e, d
}

// waitWaiters waits until n claims wait on the server.
func (e *env) waitWaiters(n int64) {
	e.t.Helper()
	waitFor(e.t, "claims waiting", func() bool { return e.srv.waiters.Load() == n })
}

// woken requires a claim that waited 30 s at most to have returned with a
// job well before its wait ran out: a claim that no wake ended claims once
// more as its wait ends, and would get the job then.
func (r claimResult) woken(t *testing.T) {
	t.Helper()
	r.want(t, 1)
	if r.elapsed > 20*time.Second {
		t.Fatalf("the claim got its job after %s, at the end of its wait: nothing woke it", r.elapsed)
	}
}

// TestClaimWakes: what makes a job claimable now through the server's own
// Client wakes a waiting claim at once. Polls are an hour apart and the
// wait 30 s, so a claim that was not woken gets the job only as its wait
// ends.
func TestClaimWakes(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	noPolls := Config{PollEvery: time.Hour, PollMax: time.Hour}
	wait := map[string]any{"owner": "w", "wait_ms": 30000}
	eachDB(t, func(t *testing.T, db newDB) {
		t.Run("AnEnqueueByTheLibraryInTheSameProcess", func(t *testing.T) {
			t.Parallel()
			e := setup(t, db(t), noPolls)
			ch := e.claimAsync("mail", wait)
			e.waitWaiters(1)
			if _, _, err := e.c.Enqueue(ctx, fenced.EnqueueParams{Kind: "k", Queue: "mail"}); err != nil {
				t.Fatal(err)
			}
			(<-ch).woken(t)
		})
		t.Run("ARetryOfAFailedJob", func(t *testing.T) {
			t.Parallel()
			e := setup(t, db(t), noPolls)
			j, _, err := e.c.Enqueue(ctx, fenced.EnqueueParams{Kind: "k", Queue: "mail", MaxAttempts: 1})
			if err != nil {
				t.Fatal(err)
			}
			claimed, err := e.c.ClaimJobs(ctx, "mail", "w0", 1, time.Minute)
			if err != nil || len(claimed) != 1 {
				t.Fatalf("claim: %v %v", claimed, err)
			}
			if err := e.c.FailJob(ctx, claimed[0].Ref(), "boom", 0, true); err != nil {
				t.Fatal(err)
			}
			ch := e.claimAsync("mail", wait)
			e.waitWaiters(1)
			if _, err := e.c.RetryJob(ctx, j.ID); err != nil {
				t.Fatal(err)
			}
			(<-ch).woken(t)
		})
		t.Run("ARaisedLimit", func(t *testing.T) {
			t.Parallel()
			e := setup(t, db(t), noPolls)
			if _, err := e.c.SetJobLimit(ctx, fenced.JobLimit{Queue: "mail", Global: 1}); err != nil {
				t.Fatal(err)
			}
			for range 2 {
				if _, _, err := e.c.Enqueue(ctx, fenced.EnqueueParams{Kind: "k", Queue: "mail"}); err != nil {
					t.Fatal(err)
				}
			}
			if got, err := e.c.ClaimJobs(ctx, "mail", "w0", 2, time.Minute); err != nil || len(got) != 1 {
				t.Fatalf("claim under a global limit of 1: %d jobs, %v", len(got), err)
			}
			ch := e.claimAsync("mail", wait)
			e.waitWaiters(1)
			if _, err := e.c.SetJobLimit(ctx, fenced.JobLimit{Queue: "mail", Global: 2}); err != nil {
				t.Fatal(err)
			}
			(<-ch).woken(t)
		})
		t.Run("ARecoveryThatFreesASlot", func(t *testing.T) {
			t.Parallel()
			e := setup(t, db(t), noPolls)
			if _, err := e.c.SetJobLimit(ctx, fenced.JobLimit{Queue: "mail", PerKey: 1}); err != nil {
				t.Fatal(err)
			}
			for range 2 {
				if _, _, err := e.c.Enqueue(ctx, fenced.EnqueueParams{Kind: "k", Queue: "mail", ConcurrencyKey: "ann"}); err != nil {
					t.Fatal(err)
				}
			}
			lost, err := e.c.ClaimJobs(ctx, "mail", "w0", 2, 50*time.Millisecond)
			if err != nil || len(lost) != 1 {
				t.Fatalf("claim under a per-key limit of 1: %d jobs, %v", len(lost), err)
			}
			ch := e.claimAsync("mail", wait)
			e.waitWaiters(1)
			// Once the lease ran out, recovery takes the attempt back (to
			// retry in an hour) and frees the key's slot.
			waitFor(t, "the attempt recovered", func() bool {
				n, err := e.c.RecoverJobs(ctx, nil, 10, fenced.Backoff{Base: time.Hour, Max: time.Hour})
				return err == nil && n == 1
			})
			(<-ch).woken(t)
		})
	})
}

// TestWaitingClaimsShareOnePoll: however many claims wait on a queue, the
// server makes one claim per poll for all of them (not one per waiter),
// and the polls of an idle queue back off to PollMax.
func TestWaitingClaimsShareOnePoll(t *testing.T) {
	t.Parallel()
	const waiters = 20
	e, d := setupCounting(t, Config{PollEvery: 5 * time.Millisecond, PollMax: 40 * time.Millisecond})
	for range waiters {
		e.claimAsync("q", map[string]any{"owner": "w", "wait_ms": 30000})
	}
	e.waitWaiters(waiters)
	claims, polls := d.claims.Load(), e.srv.polls.pollsMade()
	waitFor(t, "ten polls", func() bool { return e.srv.polls.pollsMade() >= polls+10 })
	madeClaims, madePolls := d.claims.Load()-claims, e.srv.polls.pollsMade()-polls
	if madeClaims > madePolls+1 { // a poll may be under way
		t.Errorf("%d waiting claims made %d claims in %d polls, want one claim a poll", waiters, madeClaims, madePolls)
	}
	if got, _ := e.srv.polls.interval("q"); got != 40*time.Millisecond {
		t.Errorf("the interval after ten empty polls: %s, want PollMax (40ms)", got)
	}
}

// TestAPollFindsWhatNoWakeAnnounces: a job enqueued by another process
// (another Client on the same SQLite file: nothing wakes this server's
// claims) is found by the poll of the claims waiting for its kind, while
// the claims waiting for another kind go on waiting.
func TestAPollFindsWhatNoWakeAnnounces(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	url := testdb.SQLite(t)
	e := setup(t, url, Config{PollEvery: 5 * time.Millisecond, PollMax: 50 * time.Millisecond})
	other, err := fenced.Open(ctx, url, fenced.Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	a := e.claimAsync("q", map[string]any{"owner": "a", "wait_ms": 30000, "kinds": []string{"a"}})
	b := e.claimAsync("q", map[string]any{"owner": "b", "wait_ms": 30000, "kinds": []string{"b"}})
	e.waitWaiters(2)
	if _, _, err := other.Enqueue(ctx, fenced.EnqueueParams{Kind: "b", Queue: "q"}); err != nil {
		t.Fatal(err)
	}
	(<-b).want(t, 1)
	e.waitWaiters(1)
	select {
	case r := <-a:
		t.Fatalf("the claim of kind a returned %d %s on a job of kind b", r.r.status, r.r.raw)
	default:
	}
	if _, _, err := other.Enqueue(ctx, fenced.EnqueueParams{Kind: "a", Queue: "q"}); err != nil {
		t.Fatal(err)
	}
	(<-a).want(t, 1)
}

// TestWaitingClaimsAreCapped: beyond MaxWaiters, a claim that found
// nothing is refused at once with 503 too_many_waiters and Retry-After,
// as the API document says; a claim that does not wait is served, and a
// waiter's place is free again once it returns.
func TestWaitingClaimsAreCapped(t *testing.T) {
	t.Parallel()
	e := setup(t, testdb.SQLite(t), Config{MaxWaiters: 2})
	doc := loadAPIDoc(t)
	e.claimAsync("q", map[string]any{"owner": "w1", "wait_ms": 30000})
	e.claimAsync("q", map[string]any{"owner": "w2", "wait_ms": 30000})
	e.waitWaiters(2)
	for _, queue := range []string{"q", "other"} {
		r := e.fails(http.StatusServiceUnavailable, codeTooManyWaiters, "POST", "/v1/queues/"+queue+"/claim",
			map[string]any{"owner": "w3", "wait_ms": 30000})
		if got := r.header.Get("Retry-After"); got != "1" {
			t.Errorf("Retry-After %q, want 1", got)
		}
		if err := doc.validate("POST", "/v1/queues/{queue}/claim", r.status, r.raw); err != nil {
			t.Error(err)
		}
	}
	if jobs := e.claim("q", map[string]any{"owner": "w3"}); len(jobs) != 0 {
		t.Fatalf("a claim without wait_ms: %d jobs", len(jobs))
	}
	// One job: one waiter takes it and leaves, and a new claim may wait.
	e.enqueue(map[string]any{"kind": "k", "queue": "q"})
	waitFor(t, "a waiter to take the job", func() bool { return e.srv.waiters.Load() == 1 })
	third := e.claimAsync("q", map[string]any{"owner": "w3", "wait_ms": 30000})
	e.waitWaiters(2)
	e.srv.Close()
	(<-third).want(t, 0)
}
