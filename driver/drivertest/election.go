package drivertest

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/fenced/fenced"
)

// termsDDL is the table leaders write to: one row per fenced write, in the
// order the writes committed (seq), with the term (fence) that wrote it.
const termsDDL = `CREATE TABLE fenced_test_terms (seq BIGINT PRIMARY KEY, fence BIGINT NOT NULL, owner VARCHAR(100) NOT NULL)`

// termRow is one row of fenced_test_terms.
type termRow struct {
	seq, fence int64
	owner      string
}

// writeTerm appends a row under l in a fenced transaction: the next seq,
// l's fence and owner.
func (b Backend) writeTerm(ctx context.Context, c *fenced.Client, l fenced.Lease) error {
	return c.LeaseTx(ctx, l, func(tx fenced.Tx) error {
		var seq int64
		if err := tx.QueryRow(ctx, `SELECT COALESCE(MAX(seq), 0) FROM fenced_test_terms`).Scan(&seq); err != nil {
			return err
		}
		_, err := tx.Exec(ctx, b.bind(`INSERT INTO fenced_test_terms (seq, fence, owner) VALUES ($1, $2, $3)`), seq+1, l.Fence, l.Owner)
		return err
	})
}

// termRows reads fenced_test_terms by seq, through a lease of its own so
// the read cannot be refused.
func (e *env) termRows(t *testing.T) []termRow {
	t.Helper()
	var out []termRow
	r := e.acquire(t, "terms-reader", "reader", long)
	err := e.c.LeaseTx(ctx(t), *r, func(tx fenced.Tx) error {
		rows, err := tx.Query(ctx(t), `SELECT seq, fence, owner FROM fenced_test_terms ORDER BY seq`)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var row termRow
			if err := rows.Scan(&row.seq, &row.fence, &row.owner); err != nil {
				return err
			}
			out = append(out, row)
		}
		return rows.Err()
	})
	wantNoErr(t, err, "read terms")
	return out
}

// wantNoLeader asserts nobody leads name by the database clock.
func (e *env) wantNoLeader(t *testing.T, name string) {
	t.Helper()
	l, err := e.c.Leader(ctx(t), name)
	wantNoErr(t, err, "leader")
	if l != nil {
		t.Fatalf("%s still led after the campaign ended: %+v", name, l)
	}
}

// recv waits for a value from ch, failing the test after a minute.
func recv[T any](t *testing.T, ch <-chan T, what string) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(time.Minute):
		t.Fatalf("no %s", what)
		var zero T
		return zero
	}
}

// runCampaign: among campaigners one leads at a time, each term with a
// higher fence; a term ends when lead returns (the lease is released for
// the next) or leadership is lost (lead's context ends, and its fenced
// writes are refused); Campaign returns when its context ends, releasing
// the lease (docs/design.md §4.6).
func runCampaign(t *testing.T, b Backend) {
	ttl := 3 * time.Second // generous: a loaded machine must not make a renewal miss the trust window
	t.Run("OneLeaderAtATimeFencesIncrease", func(t *testing.T) {
		t.Parallel()
		e := setup(t, b)
		b.Exec(t, e.url, termsDDL)
		const terms, writes = 6, 3
		wctx := ctx(t)
		cctx, stop := context.WithCancel(wctx)
		defer stop()
		type term struct {
			l      fenced.Lease
			writes int
		}
		var (
			mu      sync.Mutex
			led     []term
			leading int
			overlap bool
		)
		errs := make(chan error, 3)
		for i := range 3 {
			c := b.open(t, e.url, fenced.Config{})
			go func() {
				errs <- c.Campaign(cctx, "leader", fmt.Sprintf("C%d", i), ttl, fenced.CampaignOptions{RetryEvery: 20 * time.Millisecond},
					func(lctx context.Context, l fenced.Lease) error {
						mu.Lock()
						leading++
						overlap = overlap || leading > 1
						led = append(led, term{l: l})
						n := len(led)
						mu.Unlock()
						defer func() { mu.Lock(); leading--; mu.Unlock() }()
						for range writes {
							if err := b.writeTerm(wctx, c, l); err != nil {
								return fmt.Errorf("write of term %d: %w", l.Fence, err)
							}
							mu.Lock()
							led[n-1].writes++
							mu.Unlock()
							time.Sleep(10 * time.Millisecond) // a second leader would interleave here
						}
						if n >= terms {
							stop()
						}
						return nil
					})
			}()
		}
		for range 3 {
			if err := recv(t, errs, "campaign end"); !errors.Is(err, context.Canceled) {
				t.Fatalf("campaign ended with %v, want context.Canceled", err)
			}
		}
		if overlap {
			t.Fatal("two lead calls ran at once")
		}
		if len(led) < terms {
			t.Fatalf("%d terms, want %d", len(led), terms)
		}
		want := map[int64]int{} // fence → writes its leader saw commit
		for i, tm := range led {
			if i > 0 && tm.l.Fence <= led[i-1].l.Fence {
				t.Fatalf("term %d has fence %d after fence %d", i, tm.l.Fence, led[i-1].l.Fence)
			}
			if tm.writes != writes {
				t.Fatalf("term %d (fence %d) committed %d writes, want %d", i, tm.l.Fence, tm.writes, writes)
			}
			want[tm.l.Fence] = tm.writes
		}
		rows := e.termRows(t)
		got := map[int64]int{}
		for i, r := range rows {
			if i > 0 && r.fence < rows[i-1].fence {
				t.Fatalf("write %d of fence %d committed after one of fence %d: terms interleaved", r.seq, r.fence, rows[i-1].fence)
			}
			got[r.fence]++
		}
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Fatalf("writes per fence in the table %v, as the leaders saw them %v", got, want)
		}
		e.wantNoLeader(t, "leader")
	})
	t.Run("ReturningLeadHandsOverAtOnce", func(t *testing.T) {
		t.Parallel()
		e := setup(t, b)
		elected := make(chan fenced.Lease, 2)
		proceed := make(chan struct{})
		aDone := make(chan error, 1)
		aTerms := 0
		go func() {
			aDone <- e.c.Campaign(ctx(t), "leader", "A", long, fenced.CampaignOptions{Once: true},
				func(_ context.Context, l fenced.Lease) error {
					aTerms++
					elected <- l
					<-proceed
					return nil
				})
		}()
		la := recv(t, elected, "election of A")
		bctx, stopB := context.WithCancel(ctx(t))
		bDone := make(chan error, 1)
		go func() {
			c := b.open(t, e.url, fenced.Config{})
			bDone <- c.Campaign(bctx, "leader", "B", long, fenced.CampaignOptions{RetryEvery: 20 * time.Millisecond},
				func(lctx context.Context, l fenced.Lease) error {
					elected <- l
					<-lctx.Done()
					return nil
				})
		}()
		close(proceed)
		if err := recv(t, aDone, "end of A's campaign"); err != nil || aTerms != 1 {
			t.Fatalf("A's one-term campaign returned %v after %d terms, want nil after 1", err, aTerms)
		}
		lb := recv(t, elected, "election of B")
		// Both times are the database's: B took over while A's lease had
		// most of its minute left, so A released it.
		if lb.Owner != "B" || lb.Fence != la.Fence+1 || !lb.DecidedAt.Before(la.ExpiresAt) {
			t.Fatalf("B elected %+v after A's %+v: want the next fence before A's expiry", lb, la)
		}
		stopB()
		if err := recv(t, bDone, "end of B's campaign"); !errors.Is(err, context.Canceled) {
			t.Fatalf("B's campaign returned %v", err)
		}
		e.wantNoLeader(t, "leader")
	})
	t.Run("DeposedLeaderIsToldAndItsWritesRefused", func(t *testing.T) {
		t.Parallel()
		e := setup(t, b)
		b.Exec(t, e.url, termsDDL)
		wctx := ctx(t)
		cctx, stop := context.WithCancel(wctx)
		elected := make(chan fenced.Lease, 2)
		type loss struct{ cause, write error }
		lost := make(chan loss, 1)
		done := make(chan error, 1)
		go func() {
			done <- e.c.Campaign(cctx, "leader", "A", ttl, fenced.CampaignOptions{Keep: fenced.KeepOptions{RenewEvery: 50 * time.Millisecond}},
				func(lctx context.Context, l fenced.Lease) error {
					elected <- l
					<-lctx.Done()
					if cctx.Err() == nil { // deposed, not stopped
						lost <- loss{context.Cause(lctx), b.writeTerm(wctx, e.c, l)}
					}
					return lctx.Err() // told to stop: the campaign goes on
				})
		}()
		l1 := recv(t, elected, "first election")
		_, err := e.c.AdvanceFences(ctx(t), 10) // ends every lease
		wantNoErr(t, err, "advance")
		got := recv(t, lost, "loss of the first term")
		if !errors.Is(got.cause, fenced.ErrStale) {
			t.Fatalf("lead's context ended with %v, want stale", got.cause)
		}
		var se *fenced.StaleError
		if !errors.As(got.write, &se) {
			t.Fatalf("the deposed leader's write returned %v, want *StaleError", got.write)
		}
		l2 := recv(t, elected, "second election")
		if l2.Fence <= l1.Fence {
			t.Fatalf("second term fence %d after %d", l2.Fence, l1.Fence)
		}
		wantNoErr(t, b.writeTerm(wctx, e.c, l2), "write of the second term")
		stop()
		if err := recv(t, done, "campaign end"); !errors.Is(err, context.Canceled) {
			t.Fatalf("campaign returned %v", err)
		}
		if rows := e.termRows(t); len(rows) != 1 || rows[0].fence != l2.Fence {
			t.Fatalf("rows %+v, want the second term's write only", rows)
		}
	})
	t.Run("PausedLeaderIsToldAndItsWritesRefused", func(t *testing.T) {
		t.Parallel()
		e := setup(t, b)
		b.Exec(t, e.url, termsDDL)
		wctx := ctx(t)
		// No renewals: as if the leader paused; its trust window runs out.
		opts := fenced.CampaignOptions{Once: true, Keep: fenced.KeepOptions{RenewEvery: time.Hour}}
		causes := make(chan error, 1)
		proceed := make(chan struct{})
		var write error
		done := make(chan error, 1)
		go func() {
			done <- e.c.Campaign(wctx, "leader", "A", time.Second, opts, func(lctx context.Context, l fenced.Lease) error {
				<-lctx.Done()
				causes <- context.Cause(lctx)
				<-proceed
				write = b.writeTerm(wctx, e.c, l)
				return nil
			})
		}()
		if cause := recv(t, causes, "loss"); !errors.Is(cause, fenced.ErrTrustExpired) {
			t.Fatalf("lead's context ended with %v, want trust expired", cause)
		}
		e.waitExpired(t, "leader")
		close(proceed)
		err := recv(t, done, "campaign end")
		if !errors.Is(err, fenced.ErrTrustExpired) {
			t.Fatalf("one-term campaign returned %v, want the loss", err)
		}
		var se *fenced.StaleError
		if !errors.As(write, &se) || se.Reason != fenced.ReasonExpired {
			t.Fatalf("write after the lease expired returned %v, want stale (expired)", write)
		}
		if rows := e.termRows(t); len(rows) != 0 {
			t.Fatalf("rows %+v, want none", rows)
		}
	})
	t.Run("ReturnsWhenItsContextEndsAndReleases", func(t *testing.T) {
		t.Parallel()
		e := setup(t, b)
		shutdown := errors.New("shutdown")
		cctx, stop := context.WithCancelCause(ctx(t))
		elected := make(chan fenced.Lease, 1)
		done := make(chan error, 1)
		go func() {
			done <- e.c.Campaign(cctx, "leader", "A", long, fenced.CampaignOptions{}, func(lctx context.Context, l fenced.Lease) error {
				elected <- l
				<-lctx.Done()
				return context.Cause(lctx)
			})
		}()
		l := recv(t, elected, "election")
		cur, err := e.c.Leader(ctx(t), "leader")
		wantNoErr(t, err, "leader")
		if cur == nil || cur.Owner != "A" || cur.Fence != l.Fence {
			t.Fatalf("leader %+v while A leads with %+v", cur, l)
		}
		stop(shutdown)
		if err := recv(t, done, "campaign end"); !errors.Is(err, shutdown) {
			t.Fatalf("campaign returned %v, want its context's cause", err)
		}
		e.wantNoLeader(t, "leader")
		if got, _ := e.c.GetLease(ctx(t), "leader"); !got.Released || got.Fence != l.Fence {
			t.Fatalf("lease after the campaign %+v, want fence %d released", got, l.Fence)
		}
	})
	t.Run("WaitingReturnsWhenItsContextEnds", func(t *testing.T) {
		t.Parallel()
		e := setup(t, b)
		e.acquire(t, "leader", "B", long)
		shutdown := errors.New("shutdown")
		cctx, stop := context.WithCancelCause(ctx(t))
		done := make(chan error, 1)
		led := false
		go func() {
			done <- e.c.Campaign(cctx, "leader", "A", time.Second, fenced.CampaignOptions{}, func(context.Context, fenced.Lease) error {
				led = true
				return nil
			})
		}()
		time.Sleep(50 * time.Millisecond) // most likely waiting by now; either way the outcome is the same
		stop(shutdown)
		if err := recv(t, done, "campaign end"); !errors.Is(err, shutdown) || led {
			t.Fatalf("campaign returned %v (led: %v), want its context's cause without leading", err, led)
		}
		if cur, _ := e.c.Leader(ctx(t), "leader"); cur == nil || cur.Owner != "B" {
			t.Fatalf("leader %+v, want B untouched", cur)
		}
	})
	t.Run("LeadErrorEndsTheCampaign", func(t *testing.T) {
		t.Parallel()
		e := setup(t, b)
		boom := errors.New("boom")
		terms := 0
		err := e.c.Campaign(ctx(t), "leader", "A", long, fenced.CampaignOptions{}, func(context.Context, fenced.Lease) error {
			terms++
			return boom
		})
		if !errors.Is(err, boom) || terms != 1 {
			t.Fatalf("campaign returned %v after %d terms, want boom after 1", err, terms)
		}
		e.wantNoLeader(t, "leader")
	})
	t.Run("HooksSeeEveryTerm", func(t *testing.T) {
		t.Parallel()
		e := setup(t, b)
		var elected []fenced.Lease
		var ended []error
		opts := fenced.CampaignOptions{Once: true,
			OnElected: func(l fenced.Lease) { elected = append(elected, l) },
			OnTermEnd: func(l fenced.Lease, err error) { ended = append(ended, err) }}
		var led fenced.Lease
		err := e.c.Campaign(ctx(t), "leader", "A", long, opts, func(_ context.Context, l fenced.Lease) error {
			led = l
			return nil
		})
		wantNoErr(t, err, "campaign")
		if len(elected) != 1 || elected[0] != led || len(ended) != 1 || ended[0] != nil {
			t.Fatalf("OnElected saw %+v, OnTermEnd %v; want the one term %+v ended cleanly", elected, ended, led)
		}
	})
	t.Run("InvalidInputFailsWithoutLeading", func(t *testing.T) {
		t.Parallel()
		e := setup(t, b)
		for _, ttl := range []time.Duration{0, -time.Second} {
			err := e.c.Campaign(ctx(t), "leader", "A", ttl, fenced.CampaignOptions{}, func(context.Context, fenced.Lease) error {
				t.Error("lead called")
				return nil
			})
			wantErrIs(t, err, fenced.ErrInvalid)
		}
		wantErrIs(t, e.c.Campaign(ctx(t), "", "A", long, fenced.CampaignOptions{}, func(context.Context, fenced.Lease) error { return nil }), fenced.ErrInvalid)
		wantErrIs(t, e.c.Campaign(ctx(t), "leader", "A", long, fenced.CampaignOptions{}, nil), fenced.ErrInvalid)
		if _, err := e.c.GetLease(ctx(t), "leader"); !errors.Is(err, fenced.ErrNotFound) {
			t.Fatalf("get after invalid campaigns: %v, want the lease never acquired", err)
		}
		if l, err := e.c.Leader(ctx(t), "leader"); l != nil || err != nil {
			t.Fatalf("leader of a lease never acquired: %+v, %v; want none", l, err)
		}
	})
}
