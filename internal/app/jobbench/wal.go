package jobbench

import (
	"context"

	"github.com/fenced/fenced/driver/pgdriver"
)

// walPosition reads PostgreSQL's current write-ahead log position in bytes,
// or -1 on another backend (or when it cannot be read: a standby, a role
// without the right). Two readings around a run give the WAL the whole
// server wrote meanwhile: on a server of its own, the run's.
func (db *benchDB) walPosition(ctx context.Context) int64 {
	d, ok := db.d.(*pgdriver.Driver)
	if !ok {
		return -1
	}
	var pos int64
	if err := d.Pool().QueryRow(ctx, `SELECT pg_current_wal_lsn() - '0/0'::pg_lsn`).Scan(&pos); err != nil {
		return -1
	}
	return pos
}

// walPerJob is the WAL written per job between two positions, 0 when
// either is unknown.
func walPerJob(from, to, jobs int64) float64 {
	if from < 0 || to < from || jobs <= 0 {
		return 0
	}
	return float64(to-from) / float64(jobs)
}
