package fencedtest_test

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/fenced/fenced"
	"github.com/fenced/fenced/fencedtest"
)

// exampleT stands in for the *testing.T a real test passes: it fails by
// printing, and runs its cleanups when the example ends.
type exampleT struct {
	testing.TB
	cleanups []func()
}

func (t *exampleT) Helper()                      {}
func (t *exampleT) Fatalf(f string, args ...any) { fmt.Printf("FAIL: "+f+"\n", args...) }
func (t *exampleT) Cleanup(f func())             { t.cleanups = append(t.cleanups, f) }
func (t *exampleT) TempDir() string {
	dir, _ := os.MkdirTemp("", "fencedtest-example-")
	t.Cleanup(func() { os.RemoveAll(dir) })
	return dir
}
func (t *exampleT) done() {
	for i := len(t.cleanups) - 1; i >= 0; i-- {
		t.cleanups[i]()
	}
}

// signUp is the code under test: it enqueues a welcome email.
func signUp(ctx context.Context, c *fenced.Client, tx fenced.Tx, user string) error {
	_, _, err := c.EnqueueTx(ctx, tx, fenced.EnqueueParams{Kind: "welcome", Args: map[string]string{"user": user}, Queue: "mail"})
	return err
}

// A test asserts that the code under test enqueued its job, inside the
// code's transaction before it commits and after.
func ExampleRequireInserted() {
	t := &exampleT{} // in a test: the *testing.T
	defer t.done()
	ctx := context.Background()
	c := fencedtest.NewSQLite(t, fenced.Config{})

	l, _ := c.AcquireLease(ctx, "signup", "test", time.Minute)
	c.LeaseTx(ctx, *l, func(tx fenced.Tx) error {
		signUp(ctx, c, tx, "ann")
		fencedtest.RequireInsertedTx(t, c, tx, "welcome", &fencedtest.Match{Args: map[string]string{"user": "ann"}})
		return nil
	})
	j := fencedtest.RequireInserted(t, c, "welcome", &fencedtest.Match{Queue: "mail"})
	fmt.Println(j.Kind, string(j.Args), j.State)
	fencedtest.RequireNotInserted(t, c, "welcome", &fencedtest.Match{Args: map[string]string{"user": "bob"}})
	fencedtest.RequireNotInserted(t, c, "welcome", nil) // fails: one was enqueued
	// Output:
	// welcome {"user":"ann"} queued
	// FAIL: fencedtest: job 1 of kind "welcome" was enqueued (queue mail, args {"user":"ann"}), want none
}

// RequireManyInserted checks every job of the kinds named, in order.
func ExampleRequireManyInserted() {
	t := &exampleT{}
	defer t.done()
	ctx := context.Background()
	c := fencedtest.NewSQLite(t, fenced.Config{})
	c.EnqueueMany(ctx, nil, []fenced.EnqueueParams{{Kind: "charge", Args: map[string]int{"cents": 500}}, {Kind: "receipt"}})

	jobs := fencedtest.RequireManyInserted(t, c, []fencedtest.Expected{
		{Kind: "charge", Match: fencedtest.Match{Args: map[string]int{"cents": 500}}},
		{Kind: "receipt"},
	})
	fmt.Println(len(jobs), jobs[0].Kind, jobs[1].Kind)
	// Output: 2 charge receipt
}

// A Worker runs one job through the real path of a fenced.Worker — claim,
// fence, heartbeats, the fenced outcome write — and reports its outcome.
func ExampleWorker() {
	t := &exampleT{}
	defer t.done()
	ctx := context.Background()
	c := fencedtest.NewSQLite(t, fenced.Config{})

	type welcome struct {
		User string `json:"user"`
	}
	w := fencedtest.NewWorker(t, c, "welcome", fenced.HandleArgs(func(ctx context.Context, j *fenced.JobRun, a welcome) error {
		if a.User == "" {
			return fmt.Errorf("no user")
		}
		j.SetOutput(map[string]string{"greeted": a.User})
		return nil
	}), fenced.WorkerConfig{})

	ok := w.Work(ctx, t, fenced.EnqueueParams{Args: welcome{User: "ann"}})
	fmt.Println(ok.End.Outcome, ok.Job.State, "fence", ok.Job.Fence, string(ok.Job.Output))
	bad := w.Work(ctx, t, fenced.EnqueueParams{Args: welcome{}, MaxAttempts: 3})
	fmt.Println(bad.End.Outcome, bad.Job.State, bad.Job.LastError)
	// Output:
	// succeeded succeeded fence 1 {"greeted":"ann"}
	// retry queued no user
}

// NewSQLite gives a test a fresh migrated database of its own; NewPostgres
// and NewMySQL do the same on a server (a schema or a database of the
// test's own, dropped when it ends).
func ExampleNewSQLite() {
	t := &exampleT{}
	defer t.done()
	c := fencedtest.NewSQLite(t, fenced.Config{})
	pending, _ := c.PendingMigrations(context.Background())
	fmt.Println(c.Driver().Dialect(), "pending migrations:", len(pending))
	// Output: sqlite pending migrations: 0
}
