package jobbench

import (
	"context"
	"strings"
	"sync/atomic"

	"github.com/fenced/fenced/driver/pgdriver"
	"github.com/jackc/pgx/v5"
)

// statementCounter is a pgx tracer on the benchmark's PostgreSQL pool: it
// counts the statements the pool sends (BEGIN and COMMIT included, each
// statement of a batch once) and the round trips they take (a batch is
// one).
type statementCounter struct{ statements, roundTrips atomic.Int64 }

func (c *statementCounter) TraceQueryStart(ctx context.Context, _ *pgx.Conn, _ pgx.TraceQueryStartData) context.Context {
	c.statements.Add(1)
	c.roundTrips.Add(1)
	return ctx
}

func (c *statementCounter) TraceQueryEnd(context.Context, *pgx.Conn, pgx.TraceQueryEndData) {}

func (c *statementCounter) TraceBatchStart(ctx context.Context, _ *pgx.Conn, _ pgx.TraceBatchStartData) context.Context {
	c.roundTrips.Add(1)
	return ctx
}

func (c *statementCounter) TraceBatchQuery(context.Context, *pgx.Conn, pgx.TraceBatchQueryData) {
	c.statements.Add(1)
}

func (c *statementCounter) TraceBatchEnd(context.Context, *pgx.Conn, pgx.TraceBatchEndData) {}

// DBWork is the database work per job of a burn-down's workers on
// PostgreSQL (claims, ends, history, heartbeats): the statements and round
// trips the benchmark's pool sent, and, when the database has the
// pg_walinspect extension, the write-ahead log's records by kind — row
// versions written (a heap insert, update or delete), of them updates
// that touched no index (HOT), row locks, and index entries inserted. The
// WAL is the whole server's: run it on a server of its own.
type DBWork struct {
	Statements   float64 `json:"statements_per_job"`
	RoundTrips   float64 `json:"round_trips_per_job"`
	RowWrites    float64 `json:"row_writes_per_job,omitempty"`
	HOTUpdates   float64 `json:"hot_updates_per_job,omitempty"`
	RowLocks     float64 `json:"row_locks_per_job,omitempty"`
	IndexInserts float64 `json:"index_inserts_per_job,omitempty"`
	WALRecords   bool    `json:"wal_records"` // pg_walinspect was there
}

// dbMark is a reading of the counters at one moment of a run.
type dbMark struct {
	wal                    int64 // -1 unknown
	statements, roundTrips int64
}

func (db *benchDB) mark(ctx context.Context) dbMark {
	m := dbMark{wal: db.walPosition(ctx)}
	if db.stmts != nil {
		m.statements, m.roundTrips = db.stmts.statements.Load(), db.stmts.roundTrips.Load()
	}
	return m
}

// dbWork is the work between two marks, per job; nil on another backend.
func (db *benchDB) dbWork(ctx context.Context, from, to dbMark, jobs int64) *DBWork {
	if db.stmts == nil || jobs <= 0 {
		return nil
	}
	n := float64(jobs)
	w := &DBWork{Statements: float64(to.statements-from.statements) / n, RoundTrips: float64(to.roundTrips-from.roundTrips) / n}
	if from.wal < 0 || to.wal < from.wal {
		return w
	}
	d := db.d.(*pgdriver.Driver)
	var present bool
	if err := d.Pool().QueryRow(ctx, `SELECT to_regproc('pg_get_wal_stats') IS NOT NULL`).Scan(&present); err != nil || !present {
		return w
	}
	rows, err := d.Pool().Query(ctx, `SELECT "resource_manager/record_type", count
FROM pg_get_wal_stats(($1::bigint::numeric + '0/0'::pg_lsn)::pg_lsn, ($2::bigint::numeric + '0/0'::pg_lsn)::pg_lsn, true)`, from.wal, to.wal)
	if err != nil {
		return w
	}
	var kind string
	var count int64
	_, err = pgx.ForEachRow(rows, []any{&kind, &count}, func() error {
		w.add(kind, float64(count)/n)
		return nil
	})
	w.WALRecords = err == nil
	return w
}

// add counts a WAL record kind of pg_get_wal_stats ("Heap/HOT_UPDATE",
// "Btree/INSERT_LEAF", …; "+INIT" variants start a new page).
func (w *DBWork) add(kind string, perJob float64) {
	kind, _, _ = strings.Cut(kind, "+")
	switch kind {
	case "Heap/INSERT", "Heap/UPDATE", "Heap/DELETE":
		w.RowWrites += perJob
	case "Heap/HOT_UPDATE":
		w.RowWrites += perJob
		w.HOTUpdates += perJob
	case "Heap/LOCK", "Heap2/LOCK_UPDATED":
		w.RowLocks += perJob
	case "Btree/INSERT_LEAF", "Btree/INSERT_UPPER", "Btree/INSERT_POST":
		w.IndexInserts += perJob
	}
}
