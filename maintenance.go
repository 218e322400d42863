package fenced

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/fenced/fenced/driver"
	"github.com/fenced/fenced/fencedtype"
)

// RecoverJobs takes back up to limit running jobs whose lease expired by the
// database clock: back to queued after backoff, failed when attempts are
// exhausted, cancelled when a cancel was requested. Each job is re-checked
// on state, the fence observed and expiry in the same statement, so a
// recovery never overwrites a job that finished or was re-claimed meanwhile.
// With guard non-nil the statement runs in a transaction guarded by that
// lease, so a maintainer that lost its lease recovers nothing. When it
// recovered some, this Client's waiting claims are woken: their slots of a
// concurrency limit or a sequence are free, and a retry may be due.
func (c *Client) RecoverJobs(ctx context.Context, guard *Lease, limit int, b Backoff) (int, error) {
	g, err := maintenanceArgs(guard, limit)
	if err != nil {
		return 0, err
	}
	jd, err := c.jobQueue()
	if err != nil {
		return 0, err
	}
	n, err := jd.RecoverJobs(ctx, g, limit, b.WithDefaults())
	if err == nil && n > 0 {
		c.waker.wakeAll()
	}
	return n, err
}

// DeleteFinishedJobs deletes up to limit jobs that finished more than age
// ago, with their attempt history; guarded like RecoverJobs.
func (c *Client) DeleteFinishedJobs(ctx context.Context, guard *Lease, age time.Duration, limit int) (int, error) {
	g, err := maintenanceArgs(guard, limit)
	if err != nil {
		return 0, err
	}
	if age < 0 {
		return 0, fencedtype.Invalid("age", "%s is negative", age)
	}
	jd, err := c.jobQueue()
	if err != nil {
		return 0, err
	}
	return jd.DeleteFinishedJobs(ctx, g, age, limit)
}

// maintenanceArgs validates a maintenance call and returns its guard.
func maintenanceArgs(guard *Lease, limit int) (*driver.LeaseRef, error) {
	if limit < 1 || limit > 100000 {
		return nil, fencedtype.Invalid("limit", "%d is outside 1 to 100000", limit)
	}
	if guard == nil {
		return nil, nil
	}
	if err := validRef(*guard); err != nil {
		return nil, err
	}
	ref := leaseRef(*guard)
	return &ref, nil
}

// MaintenanceConfig tunes a Maintainer. The zero value works.
type MaintenanceConfig struct {
	// Owner names this maintainer. Default DefaultOwner().
	Owner string
	// LeaseName is the lease only one maintainer holds at a time. Default
	// "fenced:maintenance".
	LeaseName string
	// LeaseTTL is the maintenance lease's TTL. Default 30s.
	LeaseTTL time.Duration
	// Every is the interval between rounds. Default 1s.
	Every time.Duration
	// Retention is how long finished jobs are kept. Default 7 days;
	// negative keeps them for ever.
	Retention time.Duration
	// Backoff delays recovered jobs. Default DefaultBackoff.
	Backoff Backoff
	// Periodic jobs to enqueue.
	Periodic []PeriodicJob
	// VacuumRows is the number of dead row versions in the job table at
	// which a round vacuums it, and of rows changed since its statistics
	// were taken at which a round refreshes them, on a backend that needs
	// it (PostgreSQL: a claim walks the dead index entries at its queue's
	// head until VACUUM removes them, a claim planned on statistics from a
	// nearly empty queue sorts the whole backlog, and autovacuum may not
	// come for a minute; under overload the queue would slow to a fraction
	// of its capacity). A round does it at most once, and it takes at most
	// a fifth of the maintainer's time. Default DefaultVacuumRows; negative
	// never.
	VacuumRows int64
	// SkipRollup leaves out the rollup of each minute behind the
	// dashboard's charts (Client.RollupJobMinutes), which a round does once
	// a minute otherwise.
	SkipRollup bool
	// Logger receives errors. Default the Client's (Config.Logger).
	Logger *slog.Logger
	// OnRound, when set, is called after every round with what it did,
	// also when the round stopped at an error (then with what was done
	// before it). It runs on the maintainer's goroutine; keep it short.
	// Default none.
	OnRound func(MaintenanceRound)
}

// MaintenanceRound is what one round of maintenance did.
type MaintenanceRound struct {
	Recovered int  // running jobs whose lease had expired, taken back
	Deleted   int  // finished jobs deleted past retention
	Vacuumed  bool // the job table was vacuumed or analyzed (VacuumRows)
	RolledUp  int  // minutes rolled up for the charts (RollupJobMinutes)
}

// Maintainer runs the queue's maintenance — recovery of expired work,
// retention, periodic jobs — in rounds, each guarded by a fenced lease so
// that among many maintainers only the current holder's work commits.
type Maintainer struct {
	c    *Client
	cfg  MaintenanceConfig
	log  *slog.Logger
	stop context.CancelFunc
	done chan struct{}
	tidy tidier
	roll minuteRoller
	// slots finds each of cfg.Periodic's current slot.
	slots []slotFunc
}

// Rounds a maintainer makes per batch of work.
const maintenanceBatch = 1000

// StartMaintenance starts a Maintainer; it runs until Stop or ctx ends. A
// backend without the job queue is refused with ErrJobsNotSupported, a
// database with migrations pending with a *NotMigratedError. On a backend
// that cannot read its clock alone (CapClock) the maintainer rolls up no
// minutes, as with SkipRollup.
func (c *Client) StartMaintenance(ctx context.Context, cfg MaintenanceConfig) (*Maintainer, error) {
	if cfg.Owner == "" {
		cfg.Owner = DefaultOwner()
	}
	if cfg.LeaseName == "" {
		cfg.LeaseName = "fenced:maintenance"
	}
	if cfg.LeaseTTL == 0 {
		cfg.LeaseTTL = 30 * time.Second
	}
	if cfg.Every <= 0 {
		cfg.Every = time.Second
	}
	if cfg.Retention == 0 {
		cfg.Retention = 7 * 24 * time.Hour
	}
	if cfg.VacuumRows == 0 {
		cfg.VacuumRows = DefaultVacuumRows
	}
	if err := validName("owner", cfg.Owner); err != nil {
		return nil, err
	}
	if err := validName("lease name", cfg.LeaseName); err != nil {
		return nil, err
	}
	if err := validTTL(cfg.LeaseTTL); err != nil {
		return nil, err
	}
	slots, err := periodicSlots(cfg.Periodic)
	if err != nil {
		return nil, err
	}
	if _, err := c.jobQueue(); err != nil {
		return nil, fmt.Errorf("start maintenance: %w", err)
	}
	if err := c.checkMigrated(ctx); err != nil {
		return nil, fmt.Errorf("start maintenance: %w", err)
	}
	if !c.Supports(CapClock) {
		cfg.SkipRollup = true // the minutes are those of the database clock
	}
	log := c.orLogger(cfg.Logger)
	ctx, stop := context.WithCancel(ctx)
	m := &Maintainer{c: c, cfg: cfg, log: log, stop: stop, done: make(chan struct{}), slots: slots}
	go m.run(ctx)
	return m, nil
}

// Stop ends the maintainer and releases its lease.
func (m *Maintainer) Stop() {
	m.stop()
	<-m.done
}

// run campaigns for the maintenance lease until ctx ends (Stop), doing
// rounds while it leads; Campaign releases the lease when ctx ends.
func (m *Maintainer) run(ctx context.Context) {
	defer close(m.done)
	_ = m.c.Campaign(ctx, m.cfg.LeaseName, m.cfg.Owner, m.cfg.LeaseTTL,
		CampaignOptions{RetryEvery: m.cfg.Every, Logger: m.log}, m.hold)
}

// hold does rounds, every cfg.Every, while lease leads (until ctx ends).
func (m *Maintainer) hold(ctx context.Context, lease Lease) error {
	for {
		if err := m.Round(ctx, lease); err != nil && ctx.Err() == nil {
			m.log.Warn("fenced: maintenance round", "err", err)
		}
		sleepCtx(ctx, m.cfg.Every)
		if ctx.Err() != nil {
			return nil
		}
	}
}

// Round runs one round of maintenance under lease (the maintenance lease
// this maintainer holds): recover expired jobs, delete old finished ones,
// roll up the minute that ended (once a minute), enqueue due periodic jobs. Exported so tests and operators can run one.
func (m *Maintainer) Round(ctx context.Context, lease Lease) error {
	var did MaintenanceRound
	if m.cfg.OnRound != nil {
		defer func() { m.cfg.OnRound(did) }()
	}
	for {
		n, err := m.c.RecoverJobs(ctx, &lease, maintenanceBatch, m.cfg.Backoff)
		did.Recovered += n
		if err != nil {
			return err
		}
		if n < maintenanceBatch {
			break
		}
	}
	vacuumed, err := m.tidy.tidy(ctx, m.c.caps.tidier, m.cfg.VacuumRows)
	did.Vacuumed = vacuumed
	if err != nil {
		return err
	}
	if m.cfg.Retention > 0 {
		n, err := m.c.DeleteFinishedJobs(ctx, &lease, m.cfg.Retention, maintenanceBatch)
		did.Deleted = n
		if err != nil {
			return err
		}
	}
	if err := m.periodic(ctx, lease); err != nil {
		return err
	}
	if !m.cfg.SkipRollup {
		n, err := m.roll.roll(ctx, m.c)
		did.RolledUp = n
		if err != nil {
			return fmt.Errorf("roll up minutes: %w", err)
		}
	}
	return nil
}
