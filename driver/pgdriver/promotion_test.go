package pgdriver_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/fenced/fenced"
	"github.com/fenced/fenced/driver/pgdriver"
	"github.com/fenced/fenced/internal/test/testdb"
)

// TestPromotionAdvance: with fenced_promotion_advance=N, a connection that
// finds the server on another timeline than the one recorded (as after a
// promotion or a restore; simulated here by changing the record) advances
// every fence by N before it is used: the next grant is above every fence
// granted before plus N, the holder's lease is gone (its renew is stale),
// a running job's attempt is stale too; on the recorded timeline nothing
// moves.
func TestPromotionAdvance(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	base := testdb.Postgres(t)
	url := base + "&fenced_promotion_advance=1000"
	open := func() *fenced.Client {
		t.Helper()
		c, err := fenced.Open(ctx, url, fenced.Config{})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		return c
	}
	c := open()
	if _, err := c.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	l, err := c.AcquireLease(ctx, "report", "A", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	job, _, err := c.Enqueue(ctx, fenced.EnqueueParams{Kind: "k"})
	if err != nil {
		t.Fatal(err)
	}
	claimed, err := c.ClaimJobs(ctx, fenced.DefaultQueue, "W", 1, time.Minute)
	if err != nil || len(claimed) != 1 {
		t.Fatalf("claim: %v %v", claimed, err)
	}
	timeline := func() (tl *int64) {
		t.Helper()
		if err := c.Driver().(*pgdriver.Driver).Pool().QueryRow(ctx, `SELECT timeline FROM fenced_meta`).Scan(&tl); err != nil {
			t.Fatal(err)
		}
		return tl
	}
	// Migrated through a connection made before the schema existed: the
	// migration that created it recorded the identity, and a new
	// connection finds it, without advancing.
	other := open()
	if _, err := other.GetLease(ctx, "report"); err != nil {
		t.Fatal(err)
	}
	recorded := timeline()
	if recorded == nil {
		t.Fatal("no timeline recorded")
	}
	if got, err := other.GetLease(ctx, "report"); err != nil || !got.Held || got.Fence != l.Fence {
		t.Fatalf("same timeline: lease = %+v, %v; want held, fence %d", got, err, l.Fence)
	}

	// Another timeline recorded: as a promoted standby that had not received
	// the last commits would show. A new client's first connection advances.
	testdb.Exec(t, base, `UPDATE fenced_meta SET timeline = timeline + 1`)
	promoted := open()
	if _, err := promoted.RenewLease(ctx, *l, time.Minute); !errors.Is(err, fenced.ErrStale) {
		t.Fatalf("renew of the generation granted before the promotion: %v, want stale", err)
	}
	next, err := promoted.AcquireLease(ctx, "report", "B", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if next.Fence <= l.Fence+1000 {
		t.Fatalf("fence after the promotion = %d, want above %d", next.Fence, l.Fence+1000)
	}
	if err := promoted.CompleteJob(ctx, claimed[0].Ref(), nil); !errors.Is(err, fenced.ErrStale) {
		t.Fatalf("completion of the attempt claimed before the promotion: %v, want stale", err)
	}
	if got := timeline(); got == nil || *got != *recorded {
		t.Fatalf("timeline recorded after the advance = %v, want the server's %d", got, *recorded)
	}
	if j, _, err := promoted.GetJob(ctx, job.ID); err != nil || j.Fence <= claimed[0].Fence+999 {
		t.Fatalf("job after the advance: %+v, %v", j, err)
	}
	// Once recorded, new connections on the same timeline advance nothing.
	again := open()
	if got, err := again.GetLease(ctx, "report"); err != nil || got.Fence != next.Fence || !got.Held {
		t.Fatalf("lease on the same timeline = %+v, %v; want B's fence %d held", got, err, next.Fence)
	}
}

func TestPromotionAdvanceParameter(t *testing.T) {
	t.Parallel()
	for _, bad := range []string{"0", "-1", "x", "2000000000000"} {
		_, err := pgdriver.ParseURL("postgres://u@h/db?fenced_promotion_advance=" + bad)
		if !errors.Is(err, fenced.ErrInvalid) {
			t.Errorf("fenced_promotion_advance=%s: %v, want invalid", bad, err)
		}
	}
	cfg, err := pgdriver.ParseURL("postgres://u@h/db?fenced_promotion_advance=5")
	if err != nil {
		t.Fatal(err)
	}
	if _, sent := cfg.ConnConfig.RuntimeParams["fenced_promotion_advance"]; sent || cfg.AfterConnect == nil {
		t.Fatalf("the parameter is not the driver's: runtime params %v", cfg.ConnConfig.RuntimeParams)
	}
}

// TestPromotionAdvanceOnceUnderConcurrentConnections: clients starting at
// once on a server whose timeline differs from the one recorded (as every
// client of a service does right after a failover) all connect, and the
// fences advance once: the connection that records the new timeline
// advances, the ones that waited for it find it recorded.
func TestPromotionAdvanceOnceUnderConcurrentConnections(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	base := testdb.Postgres(t)
	url := base + "&fenced_promotion_advance=1000"
	c := openClient(t, url)
	if _, err := c.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	l, err := c.AcquireLease(ctx, "report", "A", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	openClient(t, url) // records the timeline
	for round := range 3 {
		testdb.Exec(t, base, `UPDATE fenced_meta SET timeline = timeline + 1`)
		clients := make([]*fenced.Client, 8)
		errs := make([]error, len(clients))
		var wg sync.WaitGroup
		for i := range clients {
			wg.Add(1)
			go func() {
				defer wg.Done()
				clients[i], errs[i] = fenced.Open(ctx, url, fenced.Config{})
			}()
		}
		wg.Wait()
		for i, err := range errs {
			if err != nil {
				t.Fatalf("round %d, client %d: %v", round, i, err)
			}
			defer clients[i].Close()
		}
		floor, err := clients[0].Driver().(*pgdriver.Driver).FenceFloor(ctx)
		if want := l.Fence + int64(round+1)*1000; err != nil || floor != want {
			t.Fatalf("round %d: fence floor %d, %v; want %d (one advance a promotion)", round, floor, err, want)
		}
	}
}

// TestPromotionAdvanceWhereNoIdentityWasRecorded: a database that has
// issued fences but records no identity (one migrated by a fenced before
// the identity was recorded, or a copy of it) may be a copy of one that
// granted more: its first checked connection advances, and records.
func TestPromotionAdvanceWhereNoIdentityWasRecorded(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	base := testdb.Postgres(t)
	c := openClient(t, base)
	if _, err := c.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	for _, clear := range []struct{ name, sql string }{
		{"NoTimeline", `UPDATE fenced_meta SET timeline = NULL`},
		{"NothingRecorded", `UPDATE fenced_meta SET timeline = NULL, system_identifier = NULL, database_oid = NULL, meta_oid = NULL`},
	} {
		t.Run(clear.name, func(t *testing.T) {
			l, err := c.AcquireLease(ctx, "report-"+clear.name, "A", time.Minute)
			if err != nil {
				t.Fatal(err)
			}
			testdb.Exec(t, base, clear.sql)
			checked := openClient(t, base+"&fenced_promotion_advance=1000")
			if _, err := checked.RenewLease(ctx, *l, time.Minute); !errors.Is(err, fenced.ErrStale) {
				t.Fatalf("renew where no identity was recorded: %v, want stale", err)
			}
			floor, err := checked.Driver().(*pgdriver.Driver).FenceFloor(ctx)
			if err != nil {
				t.Fatal(err)
			}
			next, err := checked.AcquireLease(ctx, "report-"+clear.name, "B", time.Minute)
			if err != nil || next.Fence != floor+1 || floor < l.Fence+1000 {
				t.Fatalf("next grant: %+v, %v; want fence %d, above %d", next, err, floor+1, l.Fence+1000)
			}
			again := openClient(t, base+"&fenced_promotion_advance=1000")
			if _, err := again.RenewLease(ctx, *next, time.Minute); err != nil {
				t.Fatalf("renew once the identity is recorded: %v", err)
			}
		})
	}
}

// TestPromotionAdvanceChecksAConnectionMadeBeforeTheMigration: a
// connection that found the schema not migrated (here a database migrated
// before the timeline was recorded, with fences issued) could not check;
// once the migration has run, it checks before it is next used, so the
// first grant through it is above the advanced floor.
func TestPromotionAdvanceChecksAConnectionMadeBeforeTheMigration(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	base := testdb.Postgres(t)
	c := openClient(t, base)
	if _, err := c.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	l, err := c.AcquireLease(ctx, "report", "A", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	testdb.Exec(t, base, `ALTER TABLE fenced_meta DROP COLUMN timeline`)
	testdb.Exec(t, base, `DELETE FROM fenced_schema_migrations WHERE version = 7`)
	one := openClient(t, base+"&pool_max_conns=1&fenced_promotion_advance=1000")
	if _, err := one.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	next, err := one.AcquireLease(ctx, "report", "B", time.Minute)
	if err != nil || next.Fence != l.Fence+1001 {
		t.Fatalf("first grant after the migration: %+v, %v; want fence %d", next, err, l.Fence+1001)
	}
}
