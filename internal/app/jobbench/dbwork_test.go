package jobbench

import "testing"

// The WAL record kinds of pg_get_wal_stats are counted by what they write:
// row versions (HOT among them), row locks and index entries; page-starting
// (+INIT) variants count as their kind, and the rest are ignored.
func TestDBWorkCountsWALRecordsByKind(t *testing.T) {
	var w DBWork
	for kind, n := range map[string]float64{
		"Heap/INSERT": 1, "Heap/INSERT+INIT": 0.5, "Heap/UPDATE": 1, "Heap/HOT_UPDATE": 2, "Heap/DELETE": 0.25,
		"Heap/LOCK": 3, "Heap2/LOCK_UPDATED": 1,
		"Btree/INSERT_LEAF": 7, "Btree/INSERT_UPPER": 0.5,
		"Transaction/COMMIT": 9, "Heap2/PRUNE": 4, "XLOG/FPI": 2,
	} {
		w.add(kind, n)
	}
	if w.RowWrites != 4.75 || w.HOTUpdates != 2 || w.RowLocks != 4 || w.IndexInserts != 7.5 {
		t.Fatalf("%+v", w)
	}
}
