package main

import (
	"testing"

	"github.com/fenced/fenced/internal/test/testdb"
)

// TestSnapshotRestoreNeedsFenceAdvance: a PostgreSQL data directory copied
// while the cluster was stopped (a filesystem or VM snapshot) and restored
// in place is the same cluster, database and timeline as the one that went
// on granting: even with fenced_promotion_advance set, nothing tells the
// restored copy apart, and its next grant would repeat a fence already
// handed out. "fence advance" is what moves it past them.
func TestSnapshotRestoreNeedsFenceAdvance(t *testing.T) {
	t.Parallel()
	own := testdb.NewPrivatePostgres(t)
	testdb.Exec(t, own.URL("postgres"), `CREATE DATABASE app`)
	c := newCLI(t, own.URL("app")+"&fenced_promotion_advance=1000")
	c.ok("migrate")
	c.ok("lease", "acquire", "job", "--owner", "A")
	own.Stop()
	snapshot := own.SnapshotDir("snapshot")
	own.CopyDataDir(snapshot)
	own.Start()
	// Granted after the snapshot: fences a protected resource may have seen.
	c.ok("lease", "release", "job", "--owner", "A", "--fence", "1")
	var l leaseOutput
	c.json(&l, "lease", "acquire", "job", "--owner", "B", "--json")
	if l.Fence != 2 {
		t.Fatalf("B's fence %d, want 2", l.Fence)
	}
	own.Stop()
	own.RestoreDataDir(snapshot)
	own.Start()

	if l := showLease(c, "job"); l.Fence != 1 || l.Owner != "A" || l.Advanced {
		t.Fatalf("after the snapshot restore: %+v; want A's fence 1, as the snapshot holds it (not advanced)", l)
	}
	var adv struct {
		Floor int64 `json:"floor"`
	}
	c.json(&adv, "fence", "advance", "--by", "1000", "--yes", "--json")
	if adv.Floor != 1001 {
		t.Fatalf("floor %d, want 1001", adv.Floor)
	}
	c.json(&l, "lease", "acquire", "job", "--owner", "C", "--json")
	if l.Fence != 1002 {
		t.Fatalf("next owner's fence after the advance %d, want 1002 (above B's 2)", l.Fence)
	}
}
