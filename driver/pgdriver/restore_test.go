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

// restoreAdvance is the fenced_promotion_advance of the restore tests.
const restoreAdvance = 1000

// restoreSource is a fenced database with grants in it, as it was when it
// was dumped: lease "report" held by B with fence 2 (A held fence 1 and
// released it), and a job claimed by W.
type restoreSource struct {
	lease   fenced.Lease
	claimed fenced.Job
	dump    []byte
}

// withAdvance is url with fenced_promotion_advance set.
func withAdvance(url string) string { return url + "&fenced_promotion_advance=1000" }

func newRestoreSource(ctx context.Context, t *testing.T, url string) restoreSource {
	t.Helper()
	c := openClient(t, url)
	if _, err := c.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	a, err := c.AcquireLease(ctx, "report", "A", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.ReleaseLease(ctx, *a); err != nil {
		t.Fatal(err)
	}
	b, err := c.AcquireLease(ctx, "report", "B", time.Minute)
	if err != nil || b.Fence != 2 {
		t.Fatalf("B's grant: %+v, %v; want fence 2", b, err)
	}
	if _, _, err := c.Enqueue(ctx, fenced.EnqueueParams{Kind: "k"}); err != nil {
		t.Fatal(err)
	}
	claimed, err := c.ClaimJobs(ctx, fenced.DefaultQueue, "W", 1, time.Minute)
	if err != nil || len(claimed) != 1 {
		t.Fatalf("claim: %v %v", claimed, err)
	}
	// A new connection checks (and, where nothing is recorded yet, records)
	// the source's identity before the dump: the copy carries it.
	if _, err := openClient(t, url).GetLease(ctx, "report"); err != nil {
		t.Fatal(err)
	}
	return restoreSource{lease: *b, claimed: *claimed[0], dump: testdb.PostgresDump(t, url)}
}

// requireAdvanced checks that c's database was advanced exactly once by
// restoreAdvance past src: the floor is the largest fence stored plus the
// advance, B's lease and W's attempt are stale, the next owner's fence is
// above the floor, and the job's next attempt is above its old fence plus
// the advance.
func (src restoreSource) requireAdvanced(ctx context.Context, t *testing.T, c *fenced.Client) {
	t.Helper()
	floor, err := c.Driver().(*pgdriver.Driver).FenceFloor(ctx)
	if want := src.lease.Fence + restoreAdvance; err != nil || floor != want {
		t.Fatalf("fence floor after the restore = %d, %v; want %d (advanced once)", floor, err, want)
	}
	if _, err := c.RenewLease(ctx, src.lease, time.Minute); !errors.Is(err, fenced.ErrStale) {
		t.Fatalf("renew of the lease granted before the dump: %v, want stale", err)
	}
	if err := c.CompleteJob(ctx, src.claimed.Ref(), nil); !errors.Is(err, fenced.ErrStale) {
		t.Fatalf("completion of the attempt claimed before the dump: %v, want stale", err)
	}
	next, err := c.AcquireLease(ctx, "report", "C", 10*time.Minute)
	if want := src.lease.Fence + restoreAdvance + 1; err != nil || next.Fence != want {
		t.Fatalf("next owner after the restore: %+v, %v; want fence %d", next, err, want)
	}
	if j, _, err := c.GetJob(ctx, src.claimed.ID); err != nil || j.Fence < src.claimed.Fence+restoreAdvance {
		t.Fatalf("job after the restore: %+v, %v; want its fence moved up by %d", j, err, restoreAdvance)
	}
}

// requireNotAdvanced checks that c's database still holds what it held:
// the floor is unchanged and l is still held with its fence.
func requireNotAdvanced(ctx context.Context, t *testing.T, c *fenced.Client, floor int64, l fenced.Lease) {
	t.Helper()
	if got, err := c.Driver().(*pgdriver.Driver).FenceFloor(ctx); err != nil || got != floor {
		t.Fatalf("fence floor = %d, %v; want %d (no advance)", got, err, floor)
	}
	if _, err := c.RenewLease(ctx, l, time.Minute); err != nil {
		t.Fatalf("renew of %s's fence %d: %v, want it still held", l.Owner, l.Fence, err)
	}
}

// TestRestoreAdvance: with fenced_promotion_advance=N, a fenced database
// dumped with pg_dump and restored with psql advances every fence by N at
// the first connection to the copy, wherever the copy is: in another
// cluster (another system identifier, even on the same timeline 1 as the
// source), in another database of the same cluster, or where the client
// may not read pg_control_system(). Clients starting at once on a copy
// advance it once. The database that was dumped, reconnected, advances
// nothing, and neither does a copy once checked, across a restart and a
// rewrite of its tables.
func TestRestoreAdvance(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	srcURL := withAdvance(testdb.Postgres(t))
	src := newRestoreSource(ctx, t, srcURL)
	schema := searchPath(t, srcURL)
	own := testdb.NewPrivatePostgres(t)

	t.Run("IntoAnotherClusterAdvancesOnce", func(t *testing.T) {
		testdb.Exec(t, own.URL("postgres"), `CREATE DATABASE restored`)
		testdb.PostgresRestore(t, own.URL("restored"), src.dump)
		url := withAdvance(testdb.WithSearchPath(t, own.URL("restored"), schema))
		// Four clients start at once on the copy: each one's first
		// connection checks; one advances, the others wait and find the
		// copy's identity recorded.
		clients := make([]*fenced.Client, 4)
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
				t.Fatalf("client %d: %v", i, err)
			}
		}
		src.requireAdvanced(ctx, t, clients[0])
		c, err := clients[1].GetLease(ctx, "report")
		if err != nil {
			t.Fatal(err)
		}

		// Restarted, and with fenced_meta rewritten (a new file, the same
		// table), the copy is the database it was: nothing more moves.
		for _, c := range clients {
			c.Close()
		}
		testdb.Exec(t, own.URL("restored"), `VACUUM FULL `+schema+`.fenced_meta`)
		own.Stop()
		own.Start()
		again := openClient(t, url)
		requireNotAdvanced(ctx, t, again, src.lease.Fence+restoreAdvance, *c)
	})

	t.Run("IntoAnotherDatabaseOfTheSameClusterAdvances", func(t *testing.T) {
		db := testdb.PostgresDatabase(t)
		testdb.PostgresRestore(t, db, src.dump)
		src.requireAdvanced(ctx, t, openClient(t, withAdvance(testdb.WithSearchPath(t, db, schema))))
	})

	t.Run("WithoutPgControlSystemAdvances", func(t *testing.T) {
		testdb.Exec(t, own.URL("postgres"), `CREATE ROLE app LOGIN`)
		testdb.Exec(t, own.URL("postgres"), `CREATE DATABASE app OWNER app`)
		testdb.Exec(t, own.URL("app"), `REVOKE EXECUTE ON FUNCTION pg_control_system() FROM PUBLIC`)
		testdb.PostgresRestore(t, own.UserURL("app", "app"), src.dump)
		url := withAdvance(testdb.WithSearchPath(t, own.UserURL("app", "app"), schema))
		c := openClient(t, url)
		src.requireAdvanced(ctx, t, c)
		var sysid *int64
		if err := c.Driver().(*pgdriver.Driver).Pool().QueryRow(ctx, `SELECT system_identifier FROM fenced_meta`).Scan(&sysid); err != nil || sysid != nil {
			t.Fatalf("system identifier recorded by a client that may not read it: %v, %v; want NULL", sysid, err)
		}
	})

	t.Run("ACloneMadeWithTemplateAdvances", func(t *testing.T) {
		testdb.Exec(t, own.URL("postgres"), `CREATE DATABASE template`)
		testdb.PostgresRestore(t, own.URL("template"), src.dump)
		c, err := fenced.Open(ctx, withAdvance(testdb.WithSearchPath(t, own.URL("template"), schema)), fenced.Config{})
		if err != nil {
			t.Fatal(err)
		}
		src.requireAdvanced(ctx, t, c) // and records the template's identity
		c.Close()
		testdb.Exec(t, own.URL("postgres"), `CREATE DATABASE clone TEMPLATE template`)
		clone := openClient(t, withAdvance(testdb.WithSearchPath(t, own.URL("clone"), schema)))
		floor, err := clone.Driver().(*pgdriver.Driver).FenceFloor(ctx)
		if want := src.lease.Fence + 2*restoreAdvance + 1; err != nil || floor != want {
			t.Fatalf("fence floor of the clone = %d, %v; want %d (the template's grant plus an advance)", floor, err, want)
		}
	})

	t.Run("TheDumpedDatabaseAdvancesNothing", func(t *testing.T) {
		requireNotAdvanced(ctx, t, openClient(t, srcURL), 0, src.lease)
	})

	// Last: it replaces the source. The cluster, the database and the
	// timeline are the ones the dump came from; only fenced_meta is a new
	// table.
	t.Run("IntoTheDatabaseItWasDumpedFromAdvances", func(t *testing.T) {
		testdb.Exec(t, testdb.PostgresURL(), `DROP SCHEMA `+schema+` CASCADE`)
		testdb.PostgresRestore(t, testdb.PostgresURL(), src.dump)
		src.requireAdvanced(ctx, t, openClient(t, srcURL))
	})
}

// searchPath is the schema a URL from testdb.Postgres uses.
func searchPath(t *testing.T, url string) string {
	t.Helper()
	cfg, err := pgdriver.ParseURL(url)
	if err != nil {
		t.Fatal(err)
	}
	return cfg.ConnConfig.RuntimeParams["search_path"]
}
