package sqlitedriver_test

import (
	"bytes"
	"context"
	"errors"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/fenced/fenced/driver"
	"github.com/fenced/fenced/driver/sqlitedriver"
	"github.com/fenced/fenced/fencedtype"
)

func TestEndJobs(t *testing.T) {
	t.Parallel()
	ctx := context.Background()

	t.Run("EveryKindOfEndWithHistory", func(t *testing.T) {
		t.Parallel()
		d, _ := setupJobs(t)
		mk := func(maxAttempts int) driver.EnqueueParams {
			p := newJob("q")
			p.MaxAttempts = maxAttempts
			return p
		}
		in := enqueue(t, d, mk(3), mk(3), mk(1), mk(3), mk(3), mk(3))
		claimed := claim(t, d, "q", "w", 10, time.Hour)
		if len(claimed) != len(in) {
			t.Fatalf("claimed %d of %d", len(claimed), len(in))
		}
		ref := func(i int) fencedtype.JobRef { return fencedtype.JobRef{ID: in[i].ID, Fence: 1} }
		errs := endJobs(t, d,
			fencedtype.JobEnd{Ref: ref(0), Kind: fencedtype.EndComplete, Output: []byte(`{"sent":true}`)},
			fencedtype.JobEnd{Ref: ref(1), Kind: fencedtype.EndFail, Error: "boom", Delay: time.Hour},
			fencedtype.JobEnd{Ref: ref(2), Kind: fencedtype.EndFail, Error: "boom"},
			fencedtype.JobEnd{Ref: ref(3), Kind: fencedtype.EndFail, Error: "bad input", Discard: true},
			fencedtype.JobEnd{Ref: ref(4), Kind: fencedtype.EndSnooze, Delay: time.Hour},
			fencedtype.JobEnd{Ref: ref(5), Kind: fencedtype.EndCancel, Error: "asked to stop"},
			fencedtype.JobEnd{Ref: fencedtype.JobRef{ID: in[0].ID, Fence: 1}, Kind: fencedtype.EndComplete},
			fencedtype.JobEnd{Ref: fencedtype.JobRef{ID: 9999, Fence: 1}, Kind: fencedtype.EndComplete},
		)
		for i := range 6 {
			if errs[i] != nil {
				t.Fatalf("end %d: %v", i, errs[i])
			}
		}
		wantStale(t, errs[6], fencedtype.ReasonNotRunning, 1, "")
		if !errors.Is(errs[7], fencedtype.ErrNotFound) {
			t.Fatalf("end of an unknown job: %v, want ErrNotFound", errs[7])
		}

		type want struct {
			state    fencedtype.JobState
			outcome  string
			errText  string
			finished bool
			max      int
		}
		for i, w := range []want{
			{fencedtype.JobSucceeded, fencedtype.OutcomeSucceeded, "", true, 3},
			{fencedtype.JobQueued, fencedtype.OutcomeRetry, "boom", false, 3},
			{fencedtype.JobFailed, fencedtype.OutcomeFailed, "boom", true, 1},
			{fencedtype.JobFailed, fencedtype.OutcomeFailed, "bad input", true, 3},
			{fencedtype.JobQueued, fencedtype.OutcomeSnoozed, "", false, 4},
			{fencedtype.JobCancelled, fencedtype.OutcomeCancelled, "asked to stop", true, 3},
		} {
			j, attempts := getJob(t, d, in[i].ID)
			if j.State != w.state || (j.FinishedAt != nil) != w.finished || j.MaxAttempts != w.max ||
				j.LeaseExpiresAt != nil || j.LastError != w.errText {
				t.Errorf("job %d: %+v, want %+v", i, j, w)
			}
			if len(attempts) != 1 {
				t.Fatalf("job %d history %+v", i, attempts)
			}
			a := attempts[0]
			if a.Attempt != 1 || a.Fence != 1 || a.Owner != "w" || a.Outcome != w.outcome || a.Error != w.errText ||
				a.EndedAt == nil || a.EndedAt.Before(a.StartedAt) {
				t.Errorf("job %d attempt %+v, want outcome %s error %q", i, a, w.outcome, w.errText)
			}
			if w.state == fencedtype.JobQueued && j.RunAt.Sub(j.DecidedAt) < 59*time.Minute {
				t.Errorf("job %d runs again in %v, want the 1h delay", i, j.RunAt.Sub(j.DecidedAt))
			}
		}
		if j, _ := getJob(t, d, in[0].ID); string(j.Output) != `{"sent":true}` {
			t.Fatalf("output %s", j.Output)
		}
	})

	t.Run("StaleEndAfterRecoveryAndReclaim", func(t *testing.T) {
		t.Parallel()
		d, _ := setupJobs(t)
		old := claimOne(t, d, 3, "w1", 20*time.Millisecond)
		waitExpired(t, d, old.ID)
		wantStale(t, endJobs(t, d, fencedtype.JobEnd{Ref: old, Kind: fencedtype.EndComplete})[0], fencedtype.ReasonExpired, 1, "")
		if n, err := d.RecoverJobs(ctx, nil, 10, noBackoff); err != nil || n != 1 {
			t.Fatalf("recover: %d, %v", n, err)
		}
		again := claim(t, d, "q", "w2", 1, time.Hour)
		if len(again) != 1 || again[0].Fence != 2 || again[0].Attempt != 2 {
			t.Fatalf("re-claim: %+v", again)
		}
		wantStale(t, endJobs(t, d, fencedtype.JobEnd{Ref: old, Kind: fencedtype.EndComplete})[0], fencedtype.ReasonSuperseded, 2, "w2")
		if _, err := d.ReportProgress(ctx, old, []byte(`{}`)); !errors.Is(err, fencedtype.ErrStale) {
			t.Fatalf("stale progress: %v", err)
		}
		cur := fencedtype.JobRef{ID: old.ID, Fence: 2}
		if err := endJobs(t, d, fencedtype.JobEnd{Ref: cur, Kind: fencedtype.EndComplete})[0]; err != nil {
			t.Fatalf("current attempt's end: %v", err)
		}
		j, attempts := getJob(t, d, old.ID)
		if j.State != fencedtype.JobSucceeded || !slices.Equal(outcomes(attempts), []string{fencedtype.OutcomeLost, fencedtype.OutcomeSucceeded}) {
			t.Fatalf("job %+v history %+v", j, attempts)
		}
		if attempts[0].Owner != "w1" || attempts[1].Owner != "w2" || attempts[1].Fence != 2 {
			t.Fatalf("history %+v", attempts)
		}
	})

	t.Run("ProgressOfTheRunningAttempt", func(t *testing.T) {
		t.Parallel()
		d, _ := setupJobs(t)
		ref := claimOne(t, d, 3, "w", time.Hour)
		if _, err := d.ReportProgress(ctx, ref, []byte(`{"done":3}`)); err != nil {
			t.Fatal(err)
		}
		j, attempts := getJob(t, d, ref.ID)
		if string(j.Progress) != `{"done":3}` {
			t.Fatalf("progress %s", j.Progress)
		}
		if len(attempts) != 1 || attempts[0].Outcome != string(fencedtype.JobRunning) || attempts[0].Fence != ref.Fence {
			t.Fatalf("history of a running job %+v", attempts)
		}
		if _, err := d.ReportProgress(ctx, fencedtype.JobRef{ID: 9999, Fence: 1}, []byte(`{}`)); !errors.Is(err, fencedtype.ErrNotFound) {
			t.Fatalf("progress of an unknown job: %v", err)
		}
	})
}

// TestEndJobsLooksUpEachJobByID: the batch end joins its list of ends to
// fenced_jobs. Planned the other way round, it walked every running job and
// scanned the whole list for each: a cost of running jobs × batch size,
// millions of steps for a worker's batch, where it should cost one lookup
// by id per end. The plan must read the list and look each job up by its
// primary key.
func TestEndJobsLooksUpEachJobByID(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	d := openJobs(t, filepath.Join(t.TempDir(), "plan.db"))
	rows, err := d.DB().QueryContext(ctx, "EXPLAIN QUERY PLAN "+sqlitedriver.EndJobsSQL,
		`[[1, 1, "complete", null, "", 0, false, null, null, null]]`)
	if err != nil {
		t.Fatalf("explain: %v", err)
	}
	defer rows.Close()
	var steps []string
	for rows.Next() {
		var id, parent, unused int
		var detail string
		if err := rows.Scan(&id, &parent, &unused, &detail); err != nil {
			t.Fatalf("scan: %v", err)
		}
		steps = append(steps, detail)
	}
	if err := rows.Err(); err != nil {
		t.Fatalf("plan: %v", err)
	}
	plan := strings.Join(steps, "; ")
	if len(steps) != 2 || !strings.HasPrefix(steps[0], "SCAN jsonb_each") ||
		!strings.Contains(steps[1], "SEARCH fenced_jobs USING INTEGER PRIMARY KEY (rowid=?)") {
		t.Fatalf("plan = %s; want the list scanned and each job searched by its primary key", plan)
	}
}

// TestEndJobsBatchNamingAJobTwiceEndsItInOrder: a batch is ended in one
// statement per run of distinct jobs, and a job named twice is ended by its
// first end; the second meets what the first left, as it would alone.
func TestEndJobsBatchNamingAJobTwiceEndsItInOrder(t *testing.T) {
	t.Parallel()
	d, _ := setupJobs(t)
	a := claimOne(t, d, 3, "w", time.Minute)
	b := claimOne(t, d, 3, "w", time.Minute)
	errs := endJobs(t, d,
		fencedtype.JobEnd{Ref: a, Kind: fencedtype.EndFail, Error: "e1"},
		fencedtype.JobEnd{Ref: b, Kind: fencedtype.EndComplete},
		fencedtype.JobEnd{Ref: a, Kind: fencedtype.EndComplete})
	var stale *fencedtype.StaleError
	if errs[0] != nil || errs[1] != nil || !errors.As(errs[2], &stale) || stale.Reason != fencedtype.ReasonNotRunning {
		t.Fatalf("errs = %v; want the first two written and the second end of job %d refused as not running", errs, a.ID)
	}
	j, attempts := getJob(t, d, a.ID)
	if j.State != fencedtype.JobQueued || j.LastError != "e1" || len(attempts) != 1 || attempts[0].Outcome != fencedtype.OutcomeRetry {
		t.Fatalf("job %d = %s, last error %q, history %+v; want queued by its failure, one retry in the history", a.ID, j.State, j.LastError, attempts)
	}
	if j, _ := getJob(t, d, b.ID); j.State != fencedtype.JobSucceeded {
		t.Fatalf("job %d = %s, want succeeded", b.ID, j.State)
	}
}

// TestEndJobsStoresOutputAndErrorAsGiven: the batch statement receives
// output and error as hex inside a JSON document; they must be stored as
// text with exactly the bytes given, an empty error as empty text (not
// NULL).
func TestEndJobsStoresOutputAndErrorAsGiven(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	d, _ := setupJobs(t)
	failed := claimOne(t, d, 3, "w", time.Minute)
	blank := claimOne(t, d, 3, "w", time.Minute)
	done := claimOne(t, d, 3, "w", time.Minute)
	output := []byte("{\"s\":\"\u00e9 \xc3\xa9 <&>\"}")
	errs := endJobs(t, d,
		fencedtype.JobEnd{Ref: failed, Kind: fencedtype.EndFail, Error: "a\x00\xffb"},
		fencedtype.JobEnd{Ref: blank, Kind: fencedtype.EndFail},
		fencedtype.JobEnd{Ref: done, Kind: fencedtype.EndComplete, Output: output})
	for i, err := range errs {
		if err != nil {
			t.Fatalf("end %d: %v", i, err)
		}
	}
	read := func(id int64, column string) ([]byte, string) {
		t.Helper()
		var v []byte
		var typ string
		if err := d.DB().QueryRowContext(ctx, `SELECT `+column+`, typeof(`+column+`) FROM fenced_jobs WHERE id = ?1`, id).Scan(&v, &typ); err != nil {
			t.Fatalf("read %s of job %d: %v", column, id, err)
		}
		return v, typ
	}
	for _, c := range []struct {
		id     int64
		column string
		want   []byte
	}{{failed.ID, "last_error", []byte("a\x00\xffb")}, {blank.ID, "last_error", []byte{}}, {done.ID, "output", output}} {
		if got, typ := read(c.id, c.column); !bytes.Equal(got, c.want) || typ != "text" {
			t.Errorf("job %d %s = %q (%s), want %q (text)", c.id, c.column, got, typ, c.want)
		}
	}
}

// TestBatchesAreSplitBySize: a batch's output and error, and a bulk insert's
// args, go in statements of about RunBytes each (one JSON document each),
// not in one document of the whole batch, which a batch of large values
// would take past SQLite's limit on a string. Values larger than the limit
// go alone.
func TestBatchesAreSplitBySize(t *testing.T) {
	t.Parallel()
	mib := strings.Repeat("x", 1<<20)
	ends := make([]fencedtype.JobEnd, 10)
	jobs := make([]driver.EnqueueParams, 10)
	for i := range ends {
		ends[i] = fencedtype.JobEnd{Ref: fencedtype.JobRef{ID: int64(i + 1), Fence: 1}, Kind: fencedtype.EndFail, Error: mib}
		jobs[i] = driver.EnqueueParams{Args: []byte(`"` + mib + `"`)}
	}
	per := sqlitedriver.RunBytes / (1 << 20) // values of the limit's size a run takes
	seen := map[int64]struct{}{}
	if got := sqlitedriver.RunOfDistinctJobs(ends, 0, seen); got != per {
		t.Errorf("a run of 1 MiB errors stops at %d, want %d", got, per)
	}
	if got := sqlitedriver.RunOfDistinctJobs(ends, 8, seen); got != 10 {
		t.Errorf("the last run stops at %d, want 10", got)
	}
	if got := sqlitedriver.BulkRunEnd(jobs, 0); got != per {
		t.Errorf("a bulk insert of 1 MiB args stops at %d, want %d", got, per)
	}
	ends[0].Error = strings.Repeat("x", sqlitedriver.RunBytes*2)
	if got := sqlitedriver.RunOfDistinctJobs(ends, 0, seen); got != 1 {
		t.Errorf("a run starting with an error past the limit stops at %d, want 1 (alone)", got)
	}
}

// TestLargeBatchesEndAndEnqueueWhole: a batch past RunBytes, in several
// statements, is enqueued and ended whole, in input order.
func TestLargeBatchesEndAndEnqueueWhole(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	d, _ := setupJobs(t)
	const n = 6
	big := `"` + strings.Repeat("é", 1<<19) + `"` // 1 MiB of JSON
	jobs := make([]driver.EnqueueParams, n)
	for i := range jobs {
		jobs[i] = newJob("big")
		jobs[i].Args = []byte(big)
		jobs[i].Priority = i
	}
	if got, err := d.EnqueueBulk(ctx, nil, jobs); err != nil || got != n {
		t.Fatalf("enqueue bulk = %d, %v; want %d", got, err, n)
	}
	claimed := claim(t, d, "big", "w", n, time.Minute)
	if len(claimed) != n {
		t.Fatalf("claimed %d jobs, want %d", len(claimed), n)
	}
	ends := make([]fencedtype.JobEnd, n)
	for i, j := range claimed {
		if i > 0 && j.ID <= claimed[i-1].ID {
			t.Fatalf("ids %d then %d: not in input order", claimed[i-1].ID, j.ID)
		}
		if string(j.Args) != big {
			t.Fatalf("job %d's args are %d bytes, want the %d given", j.ID, len(j.Args), len(big))
		}
		ends[i] = fencedtype.JobEnd{Ref: j.Ref(), Kind: fencedtype.EndComplete, Output: []byte(big)}
	}
	for i, err := range endJobs(t, d, ends...) {
		if err != nil {
			t.Fatalf("end %d: %v", i, err)
		}
	}
	for _, j := range claimed {
		got, _ := getJob(t, d, j.ID)
		if got.State != fencedtype.JobSucceeded || string(got.Output) != big {
			t.Fatalf("job %d = %s with %d bytes of output, want succeeded with %d", j.ID, got.State, len(got.Output), len(big))
		}
	}
}
