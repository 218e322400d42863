package drivertest

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/fenced/fenced"
)

// runUniqueJobs: a unique job's slot is taken by one job at a time, under
// racing enqueuers (alone, inside callers' transactions, in batches); its
// key is the kind and the parts chosen (args, some args keys, queue, the
// window of run_at); the state changes that leave its unique states free
// it, and a retry that would collide is refused, naming the holder
// (docs/design.md §6.16).
func runUniqueJobs(t *testing.T, b Backend) {
	byArgs := &fenced.UniqueOptions{ByArgs: true}
	t.Run("RacingEnqueuesGiveOneJob", func(t *testing.T) {
		t.Parallel()
		e := setup(t, b)
		clients := []*fenced.Client{e.c, e.b.open(t, e.url, fenced.Config{})}
		p := fenced.EnqueueParams{Kind: "u", Args: map[string]int{"a": 1}, Unique: byArgs}
		const n = 9
		ids, existing := make([]int64, n), make([]bool, n)
		var wg sync.WaitGroup
		for i := range n {
			wg.Add(1)
			go func() {
				defer wg.Done()
				c := clients[i%2]
				var j *fenced.Job
				var err error
				switch i % 3 {
				case 0:
					j, existing[i], err = c.Enqueue(ctx(t), p)
				case 1: // inside a caller's transaction
					// A caller's transaction that the database ends for a
					// deadlock or a serialization failure (MySQL under
					// REPEATABLE READ, PostgreSQL under SERIALIZABLE) is
					// run again, as its caller would.
					l := e.acquire(t, fmt.Sprintf("tx-%d", i), "A", long)
					for try := 0; try < 5; try++ {
						err = c.LeaseTx(ctx(t), *l, func(tx fenced.Tx) (err error) {
							j, existing[i], err = c.EnqueueTx(ctx(t), tx, p)
							return err
						})
						if !txMustRetry(err) {
							break
						}
					}
				case 2: // in a batch, with a job that is not unique
					var res []fenced.EnqueueResult
					res, err = c.EnqueueMany(ctx(t), nil, []fenced.EnqueueParams{p, {Kind: "plain"}})
					if err == nil {
						j, existing[i] = res[0].Job, res[0].Existing
						if res[1].Existing {
							t.Errorf("the job without unique options came back existing")
						}
					}
				}
				if err != nil {
					t.Errorf("enqueue %d: %v", i, err)
					return
				}
				ids[i] = j.ID
			}()
		}
		wg.Wait()
		created := 0
		for i := range n {
			if ids[i] != ids[0] {
				t.Fatalf("ids = %v, want one job", ids)
			}
			if !existing[i] {
				created++
			}
		}
		if created != 1 {
			t.Fatalf("%d enqueues say they created the job, want 1 (existing = %v)", created, existing)
		}
		if got := e.countKind(t, "u"); got != 1 {
			t.Fatalf("%d unique jobs exist", got)
		}
		if got := e.countKind(t, "plain"); got != n/3 {
			t.Fatalf("%d plain jobs exist, want %d", got, n/3)
		}
	})
	t.Run("RacingBulkEnqueuesGiveOneJobPerSlot", func(t *testing.T) {
		t.Parallel()
		e := setup(t, b)
		clients := []*fenced.Client{e.c, e.b.open(t, e.url, fenced.Config{})}
		u := func(a int) fenced.EnqueueParams {
			return fenced.EnqueueParams{Kind: "u", Args: map[string]int{"a": a}, Unique: byArgs}
		}
		const n = 6
		inserted := make([]int, n)
		var wg sync.WaitGroup
		for i := range n {
			wg.Add(1)
			go func() {
				defer wg.Done()
				batch := []fenced.EnqueueParams{u(1), u(2), {Kind: "plain"}}
				if i%2 == 1 { // the slots in the other order
					batch[0], batch[1] = batch[1], batch[0]
				}
				var err error
				if inserted[i], err = clients[i%2].EnqueueBulk(ctx(t), nil, batch); err != nil {
					t.Errorf("bulk %d: %v", i, err)
				}
			}()
		}
		wg.Wait()
		total := 0
		for _, k := range inserted {
			total += k
		}
		if got := e.countKind(t, "u"); got != 2 || total != 2+n {
			t.Fatalf("%d unique jobs exist, %d jobs counted inserted (%v); want 2 and %d", got, total, inserted, 2+n)
		}
	})
	t.Run("RepeatsWithinABatch", func(t *testing.T) {
		t.Parallel()
		e := setup(t, b)
		u := func(a int) fenced.EnqueueParams {
			return fenced.EnqueueParams{Kind: "u", Args: map[string]int{"a": a}, Unique: byArgs}
		}
		res, err := e.c.EnqueueMany(ctx(t), nil, []fenced.EnqueueParams{u(1), u(1), {Kind: "u"}, u(2), u(1)})
		wantNoErr(t, err, "enqueue many")
		if res[0].Existing || !res[1].Existing || res[1].Job.ID != res[0].Job.ID || res[2].Existing ||
			res[3].Existing || res[3].Job.ID == res[0].Job.ID || !res[4].Existing || res[4].Job.ID != res[0].Job.ID {
			t.Fatalf("results = %s", results(res))
		}
		n, err := e.c.EnqueueBulk(ctx(t), nil, []fenced.EnqueueParams{u(1), u(3), u(3), {Kind: "u"}})
		wantNoErr(t, err, "enqueue bulk")
		if n != 2 {
			t.Fatalf("bulk inserted %d jobs, want 2 (u(3) once and the plain job)", n)
		}
		if got := e.countKind(t, "u"); got != 5 {
			t.Fatalf("%d jobs exist, want 5", got)
		}
	})
	t.Run("KeyParts", func(t *testing.T) {
		t.Parallel()
		e := setup(t, b)
		same := func(a, b fenced.EnqueueParams, want bool) {
			t.Helper()
			ja := e.enqueue(t, a)
			jb, existing, err := e.c.Enqueue(ctx(t), b)
			wantNoErr(t, err, "enqueue")
			if (jb.ID == ja.ID) != want || existing != want {
				t.Fatalf("%+v then %+v: ids %d, %d existing %v; want the same job: %v", a, b, ja.ID, jb.ID, existing, want)
			}
			wantNoErr(t, e.c.DeleteJob(ctx(t), ja.ID), "delete")
			if jb.ID != ja.ID {
				wantNoErr(t, e.c.DeleteJob(ctx(t), jb.ID), "delete")
			}
		}
		raw := func(s string) json.RawMessage { return json.RawMessage(s) }
		p := func(kind, queue, args string, u fenced.UniqueOptions) fenced.EnqueueParams {
			return fenced.EnqueueParams{Kind: kind, Queue: queue, Args: raw(args), Unique: &u}
		}
		all := fenced.UniqueOptions{ByArgs: true}
		// All args: canonical, keys sorted at every depth; numbers as written.
		same(p("k", "", `{"a": 1, "b": {"c": 2, "d": [3, {"f": 1, "e": 0}]}}`, all), p("k", "", `{"b":{"d":[3,{"e":0,"f":1}],"c":2},"a":1}`, all), true)
		same(p("k", "", `{"a": 1}`, all), p("k", "", `{"a": 1.0}`, all), false)
		same(p("k", "", `{"a": 1}`, all), p("k", "", `{"a": 2}`, all), false)
		same(p("k", "", `{"a": 1}`, all), p("other", "", `{"a": 1}`, all), false)
		// By kind alone: args and queue are not in the key.
		same(p("k", "q1", `{"a": 1}`, fenced.UniqueOptions{}), p("k", "q2", `{"a": 2}`, fenced.UniqueOptions{}), true)
		// By queue.
		byQueue := fenced.UniqueOptions{ByArgs: true, ByQueue: true}
		same(p("k", "q1", `{}`, byQueue), p("k", "q2", `{}`, byQueue), false)
		same(p("k", "q1", `{}`, byQueue), p("k", "q1", `{}`, byQueue), true)
		same(p("k", "q1", `{}`, all), p("k", "q2", `{}`, all), true)
		// A subset of the args' keys; absent differs from null.
		sub := fenced.UniqueOptions{ArgsKeys: []string{"user", "day"}}
		same(p("k", "", `{"user": 7, "day": "mon", "n": 1}`, sub), p("k", "", `{"day": "mon", "user": 7, "n": 2}`, sub), true)
		same(p("k", "", `{"user": 7, "day": "mon"}`, sub), p("k", "", `{"user": 8, "day": "mon"}`, sub), false)
		same(p("k", "", `{"user": 7}`, sub), p("k", "", `{"user": 7, "day": null}`, sub), false)
		same(p("k", "", `{"user": 7, "n": 1}`, sub), p("k", "", `{"user": 7, "n": 2}`, sub), true)
	})
	t.Run("ByPeriodOfRunAt", func(t *testing.T) {
		t.Parallel()
		e := setup(t, b)
		hour := fenced.UniqueOptions{ByArgs: true, ByPeriod: time.Hour}
		base := time.Now().UTC().Truncate(time.Hour).Add(3 * time.Hour)
		at := func(d time.Duration) fenced.EnqueueParams {
			return fenced.EnqueueParams{Kind: "k", RunAt: base.Add(d), Unique: &hour}
		}
		first := e.enqueue(t, at(time.Minute))
		j, existing, err := e.c.Enqueue(ctx(t), at(59*time.Minute))
		wantNoErr(t, err, "enqueue")
		if !existing || j.ID != first.ID {
			t.Fatalf("a second run time in the window gave job %d (existing %v), want job %d", j.ID, existing, first.ID)
		}
		j, existing, err = e.c.Enqueue(ctx(t), at(time.Hour))
		wantNoErr(t, err, "enqueue")
		if existing || j.ID == first.ID {
			t.Fatalf("a run time in the next window gave job %d (existing %v)", j.ID, existing)
		}
		// Run now, by the database clock: one window of a day holds both
		// (unless the day ends between them).
		day := fenced.UniqueOptions{ByPeriod: 24 * time.Hour}
		a := e.enqueue(t, fenced.EnqueueParams{Kind: "now", Unique: &day})
		c, existing, err := e.c.Enqueue(ctx(t), fenced.EnqueueParams{Kind: "now", Unique: &day})
		wantNoErr(t, err, "enqueue")
		if (!existing || c.ID != a.ID) && a.RunAt.UTC().Truncate(24*time.Hour).Equal(c.RunAt.UTC().Truncate(24*time.Hour)) {
			t.Fatalf("two jobs to run now in one day's window: %d and %d", a.ID, c.ID)
		}
	})
	t.Run("StatesHoldAndFree", func(t *testing.T) {
		t.Parallel()
		e := setup(t, b)
		run := func(kind string, u fenced.UniqueOptions, end func(j *fenced.Job)) (first, again *fenced.Job, existing bool) {
			t.Helper()
			first = e.enqueue(t, fenced.EnqueueParams{Kind: kind, Unique: &u})
			end(first)
			again, existing, err := e.c.Enqueue(ctx(t), fenced.EnqueueParams{Kind: kind, Unique: &u})
			wantNoErr(t, err, "enqueue")
			return first, again, existing
		}
		complete := func(j *fenced.Job) {
			c := e.claimKind(t, j)
			wantNoErr(t, e.c.CompleteJob(ctx(t), c.Ref(), nil), "complete")
		}
		running := func(j *fenced.Job) { e.claimKind(t, j) }
		cancel := func(j *fenced.Job) {
			_, err := e.c.CancelJob(ctx(t), j.ID)
			wantNoErr(t, err, "cancel")
		}
		queuedRunning := fenced.UniqueOptions{ByState: []fenced.JobState{fenced.JobQueued, fenced.JobRunning}}
		for _, c := range []struct {
			name  string
			u     fenced.UniqueOptions
			end   func(*fenced.Job)
			holds bool
		}{
			{"Queued", fenced.UniqueOptions{}, func(*fenced.Job) {}, true},
			{"Running", queuedRunning, running, true},
			{"SucceededByDefault", fenced.UniqueOptions{}, complete, true},
			{"SucceededOutsideTheStates", queuedRunning, complete, false},
			{"Cancelled", fenced.UniqueOptions{}, cancel, false},
			{"CancelledInTheStates", fenced.UniqueOptions{ByState: []fenced.JobState{fenced.JobQueued, fenced.JobRunning, fenced.JobCancelled}}, cancel, true},
		} {
			first, again, existing := run(c.name, c.u, c.end)
			if existing != c.holds || (again.ID == first.ID) != c.holds {
				t.Errorf("%s: the second enqueue gave job %d (existing %v) after job %d; want the first job: %v",
					c.name, again.ID, existing, first.ID, c.holds)
			}
		}
		// Deleting the holder frees the slot.
		first := e.enqueue(t, fenced.EnqueueParams{Kind: "deleted", Unique: &fenced.UniqueOptions{}})
		wantNoErr(t, e.c.DeleteJob(ctx(t), first.ID), "delete")
		if j, existing, err := e.c.Enqueue(ctx(t), fenced.EnqueueParams{Kind: "deleted", Unique: &fenced.UniqueOptions{}}); err != nil || existing || j.ID == first.ID {
			t.Fatalf("after a delete: job %v existing %v err %v", j, existing, err)
		}
	})
	t.Run("RetryCollidesWithTheNewerJob", func(t *testing.T) {
		t.Parallel()
		e := setup(t, b)
		u := &fenced.UniqueOptions{ByArgs: true, ByState: []fenced.JobState{fenced.JobQueued, fenced.JobRunning, fenced.JobSucceeded}}
		p := fenced.EnqueueParams{Kind: "r", Args: map[string]int{"a": 1}, Unique: u}
		old := e.enqueue(t, p)
		c := e.claimKind(t, old)
		wantNoErr(t, e.c.FailJob(ctx(t), c.Ref(), "boom", 0, true), "fail")
		newer, existing, err := e.c.Enqueue(ctx(t), p)
		wantNoErr(t, err, "enqueue")
		if existing || newer.ID == old.ID {
			t.Fatalf("a failed job held its slot: job %d existing %v", newer.ID, existing)
		}
		_, err = e.c.RetryJob(ctx(t), old.ID)
		var ue *fenced.UniqueConflictError
		if !errors.As(err, &ue) || !errors.Is(err, fenced.ErrUniqueConflict) || ue.ID != old.ID || ue.ExistingID != newer.ID {
			t.Fatalf("retry of job %d = %v (%#v), want a unique conflict with job %d", old.ID, err, ue, newer.ID)
		}
		if j, _ := e.job(t, old.ID); j.State != fenced.JobFailed {
			t.Fatalf("the refused retry left job %d %s", old.ID, j.State)
		}
		// Once the newer job leaves the states (cancelled), the retry goes through.
		_, err = e.c.CancelJob(ctx(t), newer.ID)
		wantNoErr(t, err, "cancel")
		j, err := e.c.RetryJob(ctx(t), old.ID)
		wantNoErr(t, err, "retry")
		if j.State != fenced.JobQueued {
			t.Fatalf("retried job is %s", j.State)
		}
		if again, existing, err := e.c.Enqueue(ctx(t), p); err != nil || !existing || again.ID != old.ID {
			t.Fatalf("after the retry, an enqueue gave %v existing %v err %v; want job %d", again, existing, err, old.ID)
		}
	})
	t.Run("AUniqueJobKeepsItsOtherFields", func(t *testing.T) {
		t.Parallel()
		e := setup(t, b)
		retry := &fenced.Backoff{Base: 2 * time.Second, Max: time.Minute, Jitter: 0.25}
		p := func(n int) fenced.EnqueueParams {
			return fenced.EnqueueParams{Kind: "u", Args: map[string]int{"n": n}, Unique: byArgs, Queue: "q",
				Priority: 4, MaxAttempts: 3, ConcurrencyKey: "ck", Metadata: map[string]string{"m": "v"},
				Timeout: 90 * time.Second, Retry: retry, Tags: []string{"t1", "t2"}}
		}
		check := func(how string, j *fenced.Job) {
			t.Helper()
			if j.Queue != "q" || j.Priority != 4 || j.MaxAttempts != 3 || j.ConcurrencyKey != "ck" ||
				string(j.Metadata) != `{"m":"v"}` && string(j.Metadata) != `{"m": "v"}` ||
				j.Timeout != 90*time.Second || j.Retry == nil || j.Retry.Base != 2*time.Second || j.Retry.Max != time.Minute ||
				len(j.Tags) != 2 || j.Tags[0] != "t1" || j.Tags[1] != "t2" {
				t.Fatalf("unique job enqueued by %s lost a field: %+v (retry %+v)", how, j, j.Retry)
			}
		}
		j, _, err := e.c.Enqueue(ctx(t), p(1))
		wantNoErr(t, err, "enqueue")
		check("Enqueue", j)
		res, err := e.c.EnqueueMany(ctx(t), nil, []fenced.EnqueueParams{p(2), {Kind: "plain"}})
		wantNoErr(t, err, "enqueue many")
		check("EnqueueMany", res[0].Job)
		n, err := e.c.EnqueueBulk(ctx(t), nil, []fenced.EnqueueParams{p(3), p(3)})
		wantNoErr(t, err, "enqueue bulk")
		if n != 1 {
			t.Fatalf("bulk of a repeated unique job inserted %d, want 1", n)
		}
		jobs, err := e.c.ListJobs(ctx(t), fenced.JobFilter{Queue: "q"})
		wantNoErr(t, err, "list")
		if len(jobs) != 3 {
			t.Fatalf("%d jobs in q, want 3", len(jobs))
		}
		for _, j := range jobs {
			got, _ := e.job(t, j.ID)
			check(fmt.Sprintf("job %d", j.ID), got)
		}
	})
	t.Run("JobsWithoutUniqueAreUnaffected", func(t *testing.T) {
		t.Parallel()
		e := setup(t, b)
		e.enqueue(t, fenced.EnqueueParams{Kind: "k", Args: map[string]int{"a": 1}, Unique: byArgs})
		for range 2 {
			if _, existing, err := e.c.Enqueue(ctx(t), fenced.EnqueueParams{Kind: "k", Args: map[string]int{"a": 1}}); err != nil || existing {
				t.Fatalf("plain enqueue: existing %v err %v", existing, err)
			}
		}
		if got := e.countKind(t, "k"); got != 3 {
			t.Fatalf("%d jobs, want 3", got)
		}
	})
	t.Run("InvalidOptionsWriteNothing", func(t *testing.T) {
		t.Parallel()
		e := setup(t, b)
		for name, u := range map[string]fenced.UniqueOptions{
			"ShortPeriod":    {ByPeriod: 500 * time.Millisecond},
			"FractionPeriod": {ByPeriod: 1500 * time.Millisecond},
			"LongPeriod":     {ByPeriod: fenced.MaxUniquePeriod + time.Second},
			"NoRunning":      {ByState: []fenced.JobState{fenced.JobQueued, fenced.JobSucceeded}},
			"BadState":       {ByState: []fenced.JobState{fenced.JobQueued, fenced.JobRunning, "done"}},
			"StateTwice":     {ByState: []fenced.JobState{fenced.JobQueued, fenced.JobRunning, fenced.JobQueued}},
			"EmptyArgsKey":   {ArgsKeys: []string{""}},
			"ArgsKeyTwice":   {ArgsKeys: []string{"a", "a"}},
		} {
			_, _, err := e.c.Enqueue(ctx(t), fenced.EnqueueParams{Kind: "k", Unique: &u})
			var inv *fenced.InvalidError
			if !errors.As(err, &inv) {
				t.Errorf("%s: err = %v, want invalid", name, err)
			}
		}
		_, _, err := e.c.Enqueue(ctx(t), fenced.EnqueueParams{Kind: "k", Args: []int{1}, Unique: &fenced.UniqueOptions{ArgsKeys: []string{"a"}}})
		var inv *fenced.InvalidError
		if !errors.As(err, &inv) {
			t.Errorf("args keys of an array: err = %v, want invalid", err)
		}
		if got := e.countKind(t, "k"); got != 0 {
			t.Fatalf("%d jobs written", got)
		}
	})
}

// countKind counts the jobs of a kind.
func (e *env) countKind(t *testing.T, kind string) int {
	t.Helper()
	jobs, err := e.c.ListJobs(ctx(t), fenced.JobFilter{Kind: kind, Limit: 1000})
	wantNoErr(t, err, "list")
	return len(jobs)
}

// claimKind claims j, the only queued job of its kind.
func (e *env) claimKind(t *testing.T, j *fenced.Job) *fenced.Job {
	t.Helper()
	got, err := e.c.ClaimJobs(ctx(t), j.Queue, "w", 1, long, j.Kind)
	wantNoErr(t, err, "claim")
	if len(got) != 1 || got[0].ID != j.ID {
		t.Fatalf("claimed %d jobs, want job %d", len(got), j.ID)
	}
	return got[0]
}

func results(res []fenced.EnqueueResult) string {
	s := ""
	for _, r := range res {
		s += fmt.Sprintf("[%d existing %v] ", r.Job.ID, r.Existing)
	}
	return s
}

// txMustRetry tells whether err is the database ending a caller's
// transaction for a deadlock or a serialization failure, which the caller
// runs again.
func txMustRetry(err error) bool {
	if err == nil {
		return false
	}
	m := err.Error()
	for _, code := range []string{"Error 1213", "Error 1467", "(SQLSTATE 40001)", "(SQLSTATE 40P01)"} {
		if strings.Contains(m, code) {
			return true
		}
	}
	return false
}
