package mysqldriver_test

import (
	"database/sql"
	"errors"
	"testing"
	"time"

	"github.com/fenced/fenced"
	"github.com/fenced/fenced/driver/mysqldriver"
	"github.com/fenced/fenced/fencedtype"
	"github.com/fenced/fenced/internal/test/testdb"
)

// TestBatchEndInASnapshotReportsOnlyWhatEnded: a batch end in the
// caller's REPEATABLE READ transaction, whose snapshot predates the claim,
// locks its jobs, one of which another transaction holds until its lease
// has run out. The ending statement then leaves that job running; it must
// be reported stale, not ended because the snapshot shows it queued, and
// no attempt may be recorded for it (recovery records it later).
func TestBatchEndInASnapshotReportsOnlyWhatEnded(t *testing.T) {
	t.Parallel()
	url, c := setup(t)
	for range 2 {
		_, _, err := c.Enqueue(ctx(t), fenced.EnqueueParams{Kind: "k"})
		must(t, err, "enqueue")
	}
	d := c.Driver().(*mysqldriver.Driver)
	tx, err := d.DB().BeginTx(ctx(t), &sql.TxOptions{Isolation: sql.LevelRepeatableRead})
	must(t, err, "begin")
	defer tx.Rollback()
	var queued int
	must(t, tx.QueryRowContext(ctx(t), `SELECT COUNT(*) FROM fenced_jobs WHERE state = 'queued'`).Scan(&queued), "snapshot read")

	var jobs []*fenced.Job
	for _, ttl := range []time.Duration{2 * time.Second, time.Minute} {
		claimed, err := c.ClaimJobs(ctx(t), fenced.DefaultQueue, "A", 1, ttl)
		must(t, err, "claim")
		if len(claimed) != 1 {
			t.Fatalf("claimed %d jobs", len(claimed))
		}
		jobs = append(jobs, claimed[0])
	}
	x, y := jobs[0], jobs[1]

	holder, err := openDB(t, url).BeginTx(ctx(t), nil)
	must(t, err, "begin holder")
	defer holder.Rollback()
	_, err = holder.ExecContext(ctx(t), `SELECT id FROM fenced_jobs WHERE id = ? FOR UPDATE`, x.ID)
	must(t, err, "hold the row")

	type result struct {
		errs []error
		err  error
	}
	done := make(chan result, 1)
	go func() {
		errs, _, err := d.EndJobs(ctx(t), mysqldriver.WrapTx(tx), []fencedtype.JobEnd{
			{Ref: x.Ref(), Kind: fencedtype.EndComplete}, {Ref: y.Ref(), Kind: fencedtype.EndComplete}})
		done <- result{errs, err}
	}()
	testdb.MySQLWaitBlocked(t, url)
	for {
		now, err := d.DatabaseTime(ctx(t))
		must(t, err, "db clock")
		if now.After(*x.LeaseExpiresAt) {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	must(t, holder.Commit(), "release the row")
	r := <-done
	must(t, r.err, "end")
	must(t, tx.Commit(), "commit")

	got, _, err := c.GetJob(ctx(t), x.ID)
	must(t, err, "get")
	if r.errs[0] == nil && got.State != fenced.JobSucceeded {
		t.Errorf("completion of job %d reported done, but the job is %s", x.ID, got.State)
	}
	if r.errs[0] != nil && !errors.Is(r.errs[0], fenced.ErrStale) {
		t.Fatalf("completion of job %d: %v, want stale", x.ID, r.errs[0])
	}
	if r.errs[1] != nil {
		t.Fatalf("completion of job %d: %v", y.ID, r.errs[1])
	}
	n, err := c.RecoverJobs(ctx(t), nil, 10, fenced.Backoff{Base: time.Second, Max: time.Second})
	must(t, err, "recover the job left running")
	if got.State == fenced.JobRunning && n != 1 {
		t.Fatalf("recovered %d jobs, want job %d", n, x.ID)
	}
}
