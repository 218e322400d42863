// Package drivertest is the conformance suite every fenced backend passes.
// Behaviour is specified here once; each driver's tests call Run with a
// Backend that makes fresh real databases.
package drivertest

import (
	"context"
	"errors"

	"testing"
	"time"

	"github.com/fenced/fenced"
	"github.com/fenced/fenced/driver"
)

// Backend describes how to get real databases of one kind, and the
// backend's driver constructor, so a driver outside this module runs the
// same suite.
type Backend struct {
	Name string
	// OpenDriver opens the backend on url (a URL NewURL returned); each
	// call opens connections of its own, closed when its test ends.
	OpenDriver driver.Opener
	// NewURL returns the URL of a fresh, empty database for one test.
	NewURL func(t testing.TB) string
	// Exec runs one statement (the test's own tables) on url.
	Exec func(t testing.TB, url, sql string)
	// Snapshot copies the whole fenced state of url and returns a function
	// that restores that copy. Every client of url is closed before restore.
	Snapshot func(t testing.TB, url string) (restore func())
	// WaitBlocked returns once some connection of url's database is waiting
	// on a lock. Nil when the backend cannot observe it; the suite then
	// gives the blocked call a bounded chance to return instead.
	WaitBlocked func(t testing.TB, url string)
	// Bind rewrites $1-style placeholders into the dialect's. Nil keeps them.
	Bind func(sql string) string
	// Backdate moves every time of url's jobs and their attempts d into
	// the past, as if all had happened d earlier (the charts' rollup is
	// tested on minutes that are over). Nil: those tests skip.
	Backdate func(t testing.TB, url string, d time.Duration)

	// NoSQL, when not empty, says why fenced transactions run no SQL: Exec
	// is nil and the subtests that need the test's own tables skip with it;
	// the linearizability workload leaves out its fenced transactions.
	NoSQL string
	// MinTTL is the shortest TTL the backend grants and its granularity
	// (etcd: whole seconds): the suite's short TTLs (tens of milliseconds,
	// so that expiry tests are quick) are raised to it. Zero: none.
	MinTTL time.Duration
	// ExpirySlack widens the window within which the linearizability model
	// accepts either outcome of an expiry around a reported decision time
	// (etcd: the lessor ends a lease up to its 500 ms check interval plus a
	// raft write after the TTL). Zero: the model's own millisecond.
	ExpirySlack time.Duration

	// caps is the Client Run asks for the backend's capabilities (lacks).
	caps *fenced.Client
}

// ttl is d, raised to the backend's MinTTL and rounded up to a multiple of it.
func (b Backend) ttl(d time.Duration) time.Duration {
	if b.MinTTL <= 0 || d%b.MinTTL == 0 {
		return d
	}
	return (d/b.MinTTL + 1) * b.MinTTL
}

// needSQL skips t when the backend's fenced transactions run no SQL.
func (b Backend) needSQL(t *testing.T) {
	if b.NoSQL != "" {
		t.Skip(b.NoSQL)
	}
}

func (b Backend) bind(sql string) string {
	if b.Bind == nil {
		return sql
	}
	return b.Bind(sql)
}

// Run runs the whole conformance suite against b.
//
// Each operation has a group named exactly as its API method, its driver
// method and its SQL constant are (AcquireLease, acquireLeaseSQL, …), so
// one search walks from the API to the statement and to the subtests that
// specify it. The groups after them are cross-cutting: rules that span
// several operations (generations, clock skew, a stale worker), or the
// library's own machinery (Keeper, Worker, Maintainer).
//
// A group that needs a capability (fenced.Capability: the job queue, the
// semaphores, the clock read) skips on a backend without it, with the
// Client's error for it as the reason: the suite asks a Client over the
// backend's driver (Client.Unsupported), as the HTTP service does, so a
// backend is held to every capability it declares and to no other.
func Run(t *testing.T, b Backend) {
	b = b.withCapabilities(t)
	for _, g := range groups {
		t.Run(g.name, func(t *testing.T) {
			t.Parallel()
			for _, c := range g.needs {
				b.need(t, c)
			}
			if g.sql {
				b.needSQL(t)
			}
			g.run(t, b)
		})
	}
}

// group is one group of the suite: its name, what it runs, the
// capabilities it needs, and whether it needs SQL in fenced transactions
// (the test's own tables; a backend without SQL has no SQL schema either).
type group struct {
	name  string
	run   func(*testing.T, Backend)
	needs []fenced.Capability
	sql   bool
}

// What groups need.
var (
	jobs       = []fenced.Capability{fenced.CapJobs}
	semaphores = []fenced.Capability{fenced.CapSemaphores}
	clock      = []fenced.Capability{fenced.CapClock}
	workflows  = []fenced.Capability{fenced.CapJobs, fenced.CapWorkflows}
)

// groups is the suite, in the order Run starts them.
var groups = []group{
	{name: "AcquireLease", run: runAcquireLease},
	{name: "RenewLease", run: runRenewLease},
	{name: "ReleaseLease", run: runReleaseLease},
	{name: "GetLease", run: runGetLease},
	{name: "ListLeases", run: runListLeases},
	{name: "LeaseTx", run: runLeaseTx, sql: true},
	{name: "WriteResource", run: runWriteResource},
	{name: "ReadResource", run: runReadResource},
	{name: "AdvanceFences", run: runAdvanceFences},
	{name: "CampaignLease", run: runCampaignLease},
	{name: "AcquireSlot", run: runAcquireSlot, needs: semaphores},
	{name: "RenewSlot", run: runRenewSlot, needs: semaphores},
	{name: "ReleaseSlot", run: runReleaseSlot, needs: semaphores},
	{name: "GetSemaphore", run: runGetSemaphore, needs: semaphores},
	{name: "SlotTx", run: runSlotTx, needs: semaphores, sql: true},
	{name: "Enqueue", run: runEnqueue, needs: jobs},
	{name: "EnqueueBulk", run: runEnqueueBulk, needs: jobs},
	{name: "JobMetadata", run: runJobMetadata, needs: jobs},
	{name: "TypedKinds", run: runTypedKinds, needs: jobs},
	{name: "JobPolicies", run: runJobPolicies, needs: jobs},
	{name: "UniqueJobs", run: runUniqueJobs, needs: jobs, sql: true},
	{name: "JobTags", run: runJobTags, needs: jobs},
	{name: "JobMetadataMerge", run: runJobMetadataMerge, needs: jobs},
	{name: "ClaimJobs", run: runClaimJobs, needs: jobs},
	{name: "ClaimJobsByKind", run: runClaimJobsByKind, needs: jobs},
	{name: "HeartbeatJobs", run: runHeartbeatJobs, needs: jobs},
	{name: "HeartbeatJob", run: runHeartbeatJob, needs: jobs},
	{name: "EndJobs", run: runEndJobs, needs: jobs},
	{name: "ReportProgress", run: runReportProgress, needs: jobs},
	{name: "JobTx", run: runJobTx, needs: jobs, sql: true},
	{name: "CancelJob", run: runCancelJob, needs: jobs},
	{name: "RetryJob", run: runRetryJob, needs: jobs},
	{name: "GetJob", run: runGetJob, needs: jobs},
	{name: "ListJobs", run: runListJobs, needs: jobs},
	{name: "ListJobsKeyset", run: runListJobsKeyset, needs: jobs},
	{name: "DeleteJob", run: runDeleteJob, needs: jobs},
	{name: "RecoverJobs", run: runRecoverJobs, needs: jobs},
	{name: "DeleteFinishedJobs", run: runDeleteFinishedJobs, needs: jobs},
	{name: "SetJobLimit", run: runSetJobLimit, needs: jobs},
	{name: "DeleteJobLimit", run: runDeleteJobLimit, needs: jobs},
	{name: "ListJobLimits", run: runListJobLimits, needs: jobs},
	{name: "ListKeySlots", run: runListKeySlots, needs: jobs},
	{name: "PauseQueue", run: runPauseQueue, needs: jobs},
	{name: "ResumeQueue", run: runResumeQueue, needs: jobs},
	{name: "ListQueuePauses", run: runListQueuePauses, needs: jobs},
	{name: "RollupJobMinutes", run: runRollupJobMinutes, needs: jobs},
	{name: "Workflows", run: runWorkflows, needs: workflows},
	{name: "Handoff", run: runHandoff, needs: workflows},
	{name: "DatabaseTime", run: runDatabaseTime, needs: clock},

	{name: "Keeper", run: runKeeper},
	{name: "ClockSkew", run: runClockSkew},
	{name: "Contention", run: runContention},
	{name: "Validation", run: runValidation},
	{name: "DuplicateKeys", run: runDuplicateKeys, needs: jobs},
	{name: "Linearizability", run: runLinearizability},
	{name: "Reports", run: runReports, needs: jobs},
	{name: "Generations", run: runGenerations},
	{name: "StateMachine", run: jobStateMachine, needs: jobs},
	{name: "StaleWorker", run: runStaleWorker, needs: jobs},
	{name: "JobFences", run: runJobFences, needs: jobs},
	{name: "JobError", run: runJobError, needs: jobs},
	{name: "JobClock", run: runJobClock, needs: jobs},
	{name: "Backoff", run: runJobBackoff, needs: jobs},
	{name: "Worker", run: runWorker, needs: jobs},
	{name: "WorkerStats", run: runWorkerStats, needs: jobs},
	{name: "Maintainer", run: runMaintainer, needs: jobs},
	{name: "Campaign", run: runCampaign, sql: true},
	{name: "Handover", run: runHandover},
	{name: "StaleReasons", run: runStaleReasons, sql: true},
	{name: "SemaphoreStaleReasons", run: runSemaphoreStaleReasons, needs: semaphores},
	{name: "Semaphore", run: runSemaphore, needs: semaphores},
	{name: "Migrations", run: runMigrations, sql: true},
	{name: "NothingLost", run: runNothingLost, needs: jobs, sql: true},
	{name: "ConcurrencyLimits", run: runConcurrencyLimits, needs: jobs},
	{name: "Sequences", run: runSequences, needs: jobs},
}

// withCapabilities returns b with a Client over a driver of its own, the
// one the suite asks for the backend's capabilities. New asks the driver
// once; the answers need no connection, so the driver is closed at once.
func (b Backend) withCapabilities(t testing.TB) Backend {
	t.Helper()
	d, err := b.OpenDriver(context.Background(), b.NewURL(t))
	if err != nil {
		t.Fatalf("open: %v", err)
	}
	b.caps = fenced.New(d, fenced.Config{})
	d.Close()
	return b
}

// lacks returns nil when the backend implements c, else the error a
// Client over it gives for c.
func (b Backend) lacks(t testing.TB, c fenced.Capability) error {
	t.Helper()
	if b.caps == nil { // a group run alone (RunLinearizability)
		b = b.withCapabilities(t)
	}
	return b.caps.Unsupported(c)
}

// need skips t when the backend lacks c.
func (b Backend) need(t *testing.T, c fenced.Capability) {
	t.Helper()
	if err := b.lacks(t, c); err != nil {
		t.Skip(err.Error())
	}
}

// RunLinearizability runs the linearizability group alone, for a backend's
// own tests that disturb the database while the history is recorded.
func RunLinearizability(t *testing.T, b Backend) { runLinearizability(t, b) }

// env is one test's database, a client on it and the client's driver.
type env struct {
	b   Backend
	url string
	c   *fenced.Client
	d   driver.Driver
}

// setup makes a fresh migrated database and a client on it.
func setup(t *testing.T, b Backend) *env {
	t.Helper()
	url := b.NewURL(t)
	d := b.openDriver(t, url)
	c := fenced.New(d, fenced.Config{})
	if _, err := c.Migrate(ctx(t)); err != nil {
		t.Fatalf("migrate: %v", err)
	}
	return &env{b: b, url: url, c: c, d: d}
}

// open opens another client (its own connections) on url.
func (b Backend) open(t testing.TB, url string, cfg fenced.Config) *fenced.Client {
	t.Helper()
	return fenced.New(b.openDriver(t, url), cfg)
}

// openDriver opens the backend's driver on url, closed when the test ends.
func (b Backend) openDriver(t testing.TB, url string) driver.Driver {
	t.Helper()
	d, err := b.OpenDriver(context.Background(), url)
	if err != nil {
		t.Fatalf("open: %v", err)
	}
	t.Cleanup(func() { d.Close() })
	return d
}

func ctx(t testing.TB) context.Context {
	c, cancel := context.WithTimeout(context.Background(), time.Minute)
	t.Cleanup(cancel)
	return c
}

func (e *env) acquire(t *testing.T, name, owner string, ttl time.Duration) *fenced.Lease {
	t.Helper()
	l, err := e.c.AcquireLease(ctx(t), name, owner, ttl)
	if err != nil {
		t.Fatalf("acquire %s by %s: %v", name, owner, err)
	}
	return l
}

// waitExpired polls the database clock until name is no longer held.
func (e *env) waitExpired(t *testing.T, name string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		l, err := e.c.GetLease(ctx(t), name)
		if err != nil {
			t.Fatalf("get %s: %v", name, err)
		}
		if !l.Held {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("lease %s still held at %s (expires %s)", name, l.DecidedAt, l.ExpiresAt)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// wantStale asserts err is a *StaleError with the given current fence,
// current owner and reason.
func wantStale(t *testing.T, err error, fence, current int64, owner string, reason fenced.StaleReason) {
	t.Helper()
	var se *fenced.StaleError
	if !errors.As(err, &se) {
		t.Fatalf("want *StaleError, got %v", err)
	}
	if !errors.Is(err, fenced.ErrStale) || errors.Is(err, fenced.ErrNotFound) {
		t.Fatalf("stale error must match ErrStale and not ErrNotFound: %v", err)
	}
	if se.Fence != fence || se.CurrentFence != current || se.CurrentOwner != owner || se.Reason != reason {
		t.Fatalf("stale error = {fence %d current %d owner %q reason %s}, want {fence %d current %d owner %q reason %s}",
			se.Fence, se.CurrentFence, se.CurrentOwner, se.Reason, fence, current, owner, reason)
	}
}

func wantErrIs(t *testing.T, err, target error) {
	t.Helper()
	if !errors.Is(err, target) {
		t.Fatalf("want %v, got %v", target, err)
	}
}

// errOf is the error of a call that also returns a lease.
func errOf(_ *fenced.Lease, err error) error { return err }

// errAt is the error of a call that also returns a database time.
func errAt(_ time.Time, err error) error { return err }

func wantNoErr(t *testing.T, err error, what string) {
	t.Helper()
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
}

func wantFence(t *testing.T, l *fenced.Lease, fence int64) {
	t.Helper()
	if l.Fence != fence {
		t.Fatalf("lease %s fence = %d, want %d", l.Name, l.Fence, fence)
	}
}
