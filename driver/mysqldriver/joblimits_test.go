//go:build !fenced_broken_limits

package mysqldriver_test

import (
	"database/sql"
	"slices"
	"testing"
	"time"

	"github.com/fenced/fenced"
	"github.com/fenced/fenced/driver/mysqldriver"
)

// The limited pick passes over the queued jobs of a full key, which it
// finds by counting the queue's running keyed jobs once (full_keys), and
// that count locks none of the rows it reads: a locking read's CTE reads
// without locking, so a claim never holds the running jobs that heartbeats
// and ends update, nor the limits SetJobLimit writes (a queue's default, a
// kind's, a key's own).
func TestLimitedPickPassesOverFullKeysAndLocksNoRunningJob(t *testing.T) {
	t.Parallel()
	url, c := setup(t)
	q := fenced.DefaultQueue
	_, err := c.SetJobLimit(ctx(t), fenced.JobLimit{Queue: q, PerKey: 1})
	must(t, err, "set limit")
	_, err = c.SetJobLimit(ctx(t), fenced.JobLimit{Queue: q, ConcurrencyKey: "a", PerKey: 1})
	must(t, err, "set the key's own limit")
	_, err = c.SetJobLimit(ctx(t), fenced.JobLimit{Queue: q, Kind: "k", PerKey: 1})
	must(t, err, "set the kind's default")
	enqueue := func(key string) *fenced.Job { return enqueueKeyed(t, c, key) }
	a1 := enqueue("a")
	claimFirstOfKey(t, c, q, a1)
	enqueue("a")
	b1 := enqueue("b")

	db := openDB(t, url)
	tx, err := db.BeginTx(ctx(t), &sql.TxOptions{Isolation: sql.LevelReadCommitted})
	must(t, err, "begin")
	defer tx.Rollback()
	rows, err := tx.QueryContext(ctx(t), mysqldriver.ClaimLimitedPick(0, true), q, q, q, q, q, q, 10)
	must(t, err, "pick")
	cols, err := rows.Columns()
	must(t, err, "columns")
	var picked []int64
	for rows.Next() {
		var id int64
		dest := []any{&id} // the job's id, then the rest of its row
		for range cols[1:] {
			dest = append(dest, new(sql.RawBytes))
		}
		must(t, rows.Scan(dest...), "scan")
		picked = append(picked, id)
	}
	must(t, rows.Err(), "rows")
	if !slices.Equal(picked, []int64{b1.ID}) {
		t.Fatalf("picked %v, want only job %d: key a is full", picked, b1.ID)
	}

	other, err := db.BeginTx(ctx(t), nil)
	must(t, err, "begin other")
	defer other.Rollback()
	var id int64
	err = other.QueryRowContext(ctx(t), `SELECT id FROM fenced_jobs WHERE id = ? FOR UPDATE NOWAIT`, a1.ID).Scan(&id)
	if err != nil {
		t.Fatalf("the running job %d is locked while the pick's transaction is open: %v", a1.ID, err)
	}
	for _, scope := range [][2]string{{"", ""}, {"", "a"}, {"k", ""}} {
		var perKey int
		err = other.QueryRowContext(ctx(t), `SELECT per_key_limit FROM fenced_job_limits
			WHERE queue = ? AND kind = ? AND concurrency_key = ? FOR UPDATE NOWAIT`, q, scope[0], scope[1]).Scan(&perKey)
		if err != nil {
			t.Fatalf("the limit of kind %q and key %q is locked while the pick's transaction is open: %v", scope[0], scope[1], err)
		}
	}
}

// A claim that made the queue's next picks go without the full keys (it
// admitted all it picked, and no key was full) is followed by one whose
// whole window is a full key's queued jobs: that pick starts nothing, and
// the round picks again with the full keys, which pass over the full key
// and reach the other key's job behind them, rather than end the claim
// with nothing.
func TestLimitedPickWithoutFullKeysThatStartsNothingPicksAgainWithThem(t *testing.T) {
	t.Parallel()
	_, c := setup(t)
	q := fenced.DefaultQueue
	_, err := c.SetJobLimit(ctx(t), fenced.JobLimit{Queue: q, PerKey: 1})
	must(t, err, "set limit")
	enqueue := func(key string) *fenced.Job { return enqueueKeyed(t, c, key) }
	a1 := enqueue("a")
	claimFirstOfKey(t, c, q, a1)
	for range 40 { // more than a window of a claim of one job
		enqueue("a")
	}
	b1 := enqueue("b")
	claimed, err := c.ClaimJobs(ctx(t), q, "w", 1, time.Minute)
	must(t, err, "claim behind the full key")
	if len(claimed) != 1 || claimed[0].ID != b1.ID {
		t.Fatalf("claimed %v, want job %d: key a is full, b is not", claimed, b1.ID)
	}
}

// enqueueKeyed enqueues a job of kind k with concurrency key key.
func enqueueKeyed(t *testing.T, c *fenced.Client, key string) *fenced.Job {
	t.Helper()
	j, _, err := c.Enqueue(ctx(t), fenced.EnqueueParams{Kind: "k", ConcurrencyKey: key})
	must(t, err, "enqueue")
	return j
}

// claimFirstOfKey claims one job of queue q and fails unless it is j.
func claimFirstOfKey(t *testing.T, c *fenced.Client, q string, j *fenced.Job) {
	t.Helper()
	claimed, err := c.ClaimJobs(ctx(t), q, "w", 1, time.Minute)
	must(t, err, "claim")
	if len(claimed) != 1 || claimed[0].ID != j.ID {
		t.Fatalf("claimed %v, want job %d", claimed, j.ID)
	}
}
