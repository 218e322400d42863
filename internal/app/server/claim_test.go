package server

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/fenced/fenced"
	"github.com/fenced/fenced/internal/test/testdb"
)

// claimResult is a claim sent in the background.
type claimResult struct {
	r       response
	err     error
	elapsed time.Duration
	jobs    int
}

// claimAsync sends a claim on its own goroutine.
func (e *env) claimAsync(queue string, body map[string]any) <-chan claimResult {
	ch := make(chan claimResult, 1)
	go func() {
		start := time.Now()
		r, err := e.send("POST", "/v1/queues/"+queue+"/claim", body)
		var c claimOut
		if err == nil {
			err = json.Unmarshal(r.raw, &c)
		}
		ch <- claimResult{r: r, err: err, elapsed: time.Since(start), jobs: len(c.Jobs)}
	}()
	return ch
}

// waitWaiting waits until a claim waits on queue.
func (e *env) waitWaiting(queue string) {
	e.t.Helper()
	waitFor(e.t, "a claim waiting on "+queue, func() bool {
		return e.srv.metrics.waiting.waiting(queue) > 0
	})
}

func (r claimResult) want(t *testing.T, jobs int) {
	t.Helper()
	if r.err != nil || r.r.status != 200 || r.jobs != jobs {
		t.Fatalf("claim: %v %d %s, want %d jobs", r.err, r.r.status, r.r.raw, jobs)
	}
}

func TestClaimLongPoll(t *testing.T) {
	t.Parallel()
	eachDB(t, func(t *testing.T, db newDB) {
		t.Run("EnqueueThroughTheServerWakesAWaitingClaim", func(t *testing.T) {
			t.Parallel()
			e := setup(t, db(t), Config{PollEvery: time.Hour}) // only a wake can end the wait early
			ch := e.claimAsync("mail", map[string]any{"owner": "w", "wait_ms": 20000})
			e.waitWaiting("mail")
			e.enqueue(map[string]any{"kind": "k", "queue": "mail"})
			r := <-ch
			r.want(t, 1)
			if r.elapsed > 10*time.Second {
				t.Fatalf("woken after %s", r.elapsed)
			}
		})
		t.Run("NothingWithinWaitMsIsAnEmptyAnswer", func(t *testing.T) {
			t.Parallel()
			e := setup(t, db(t), Config{})
			r := <-e.claimAsync("q", map[string]any{"owner": "w", "wait_ms": 150})
			r.want(t, 0)
			if r.elapsed < 150*time.Millisecond {
				t.Fatalf("returned after %s, before wait_ms", r.elapsed)
			}
			e.wantDBTime(r.r, "empty claim")
		})
		t.Run("WaitIsCappedAtMaxWait", func(t *testing.T) {
			t.Parallel()
			e := setup(t, db(t), Config{MaxWait: 100 * time.Millisecond})
			r := <-e.claimAsync("q", map[string]any{"owner": "w", "wait_ms": 3_600_000})
			r.want(t, 0)
			if r.elapsed > 10*time.Second {
				t.Fatalf("waited %s, the cap is 100ms", r.elapsed)
			}
		})
		t.Run("PollingFindsJobsThatBecomeDue", func(t *testing.T) {
			t.Parallel()
			e := setup(t, db(t), Config{PollEvery: 20 * time.Millisecond})
			if _, _, err := e.c.Enqueue(context.Background(), fenced.EnqueueParams{Kind: "k", Delay: 200 * time.Millisecond}); err != nil {
				t.Fatal(err)
			}
			(<-e.claimAsync("default", map[string]any{"owner": "w", "wait_ms": 20000})).want(t, 1)
		})
		t.Run("CloseEndsWaitingClaims", func(t *testing.T) {
			t.Parallel()
			e := setup(t, db(t), Config{})
			ch := e.claimAsync("q", map[string]any{"owner": "w", "wait_ms": 30000})
			e.waitWaiting("q")
			e.srv.Close()
			r := <-ch
			r.want(t, 0)
			if r.elapsed > 10*time.Second {
				t.Fatalf("claim ended %s after Close", r.elapsed)
			}
		})
	})
}

// TestClaimWokenByNotify shows the shared LISTEN/NOTIFY listener waking a
// claim for a job enqueued elsewhere (here, by the library directly).
func TestClaimWokenByNotify(t *testing.T) {
	t.Parallel()
	e := setup(t, testdb.Postgres(t), Config{PollEvery: time.Hour})
	ch := e.claimAsync("mail", map[string]any{"owner": "w", "wait_ms": 30000})
	e.waitWaiting("mail")
	// Enqueue until the listener (started with the server) hears one.
	for i := 0; ; i++ {
		if _, _, err := e.c.Enqueue(context.Background(), fenced.EnqueueParams{Kind: fmt.Sprint("k", i), Queue: "mail"}); err != nil {
			t.Fatal(err)
		}
		select {
		case r := <-ch:
			r.want(t, 1)
			return
		case <-time.After(200 * time.Millisecond):
		}
		if i > 50 {
			t.Fatal("no notification woke the claim")
		}
	}
}
