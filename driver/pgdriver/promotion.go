package pgdriver

import (
	"context"
	"errors"
	"fmt"
	"strconv"

	"github.com/fenced/fenced/fencedtype"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
)

// Fences across a promotion that lost commits, and on a restored copy.
//
// A standby promoted without every commit of the old primary (asynchronous
// replication, or a synchronous standby that was not the one promoted) has
// lost the grants those commits made, and would grant their fences again:
// two holders of one fence. A copy restored from a backup is behind in the
// same way. With fenced_promotion_advance=N in the URL (or
// AdvanceOnPromotion), every new connection compares where the database it
// reached lives — its identity — with the identity recorded in fenced_meta,
// and when they differ advances every fence by N (as AdvanceFences does:
// leases end, job fences and ids jump) in the transaction that records the
// new one, before the connection is used. The identity is
//
//   - the timeline: a promotion starts a new one, and so does a
//     point-in-time restore;
//   - the cluster's system identifier (pg_control_system()): a dump
//     restored into another cluster finds another one, even on the same
//     timeline 1 as the source. A promoted standby shares its primary's
//     (physical replication requires it), so it is the timeline that tells
//     a promotion;
//   - the database's oid: a dump restored into another database of the same
//     cluster, or a clone made with CREATE DATABASE … TEMPLATE, finds
//     another one;
//   - fenced_meta's own table oid: a dump restored creates the table again,
//     with a new oid, even in the database it was dumped from.
//
// pg_dump copies the recorded identity with the row, so a restored copy
// carries the identity of the database it was dumped from, and its first
// connection finds it different. A physical copy started as it was — a
// filesystem or VM snapshot restored in place, a base backup started
// without recovery to a new timeline — keeps all four, and is not told
// apart: those restores need a fence advance run by hand.
//
// Nothing recorded (NULL) counts as different: a database whose identity
// was never recorded may be a copy of one that granted more, so it is
// advanced, not trusted. Migrate records the identity in the transaction
// that creates the schema, so a new database (and any copy of it, even one
// taken before its first grant) has one from the start; a database migrated
// by an earlier version of fenced is advanced once by its first checked
// connection. A client that may not call pg_control_system() (EXECUTE
// revoked) compares the rest and records the system identifier as NULL
// (the next client that may read it then advances once more).
//
// Every connection of every client goes through the check, so no grant is
// made below the advanced floor. A connection that cannot check yet — to a
// standby (nothing is granted through it, but it may be promoted while
// open) or to a database not migrated yet — checks again each time it is
// taken from the pool, until it has checked. Clients connecting at once
// advance once: the advance takes its lock on every fence table before it
// records, so the others wait and then find the identity recorded. N must
// exceed the fences that can have been lost: the grants and claims of the
// replication lag, or made since the backup.

// promotionAdvanceParam is the URL parameter that sets the advance.
const promotionAdvanceParam = "fenced_promotion_advance"

// identityUnchecked marks, in a connection's CustomData, a connection that
// could not check the identity yet (standby, or schema not migrated).
const identityUnchecked = "fenced.identity-unchecked"

// AdvanceOnPromotion makes every connection of cfg advance fences by `by`
// when it finds the database's identity different from the one recorded
// (see the package documentation). ParseURL calls it for
// fenced_promotion_advance=N.
func AdvanceOnPromotion(cfg *pgxpool.Config, by int64) {
	after := cfg.AfterConnect
	cfg.AfterConnect = func(ctx context.Context, conn *pgx.Conn) error {
		if after != nil {
			if err := after(ctx, conn); err != nil {
				return err
			}
		}
		checked, _, err := checkIdentity(ctx, conn, by)
		if err == nil && !checked {
			conn.PgConn().CustomData()[identityUnchecked] = true
		}
		return err
	}
	prepare := cfg.PrepareConn
	if before := cfg.BeforeAcquire; prepare == nil && before != nil {
		prepare = func(ctx context.Context, conn *pgx.Conn) (bool, error) { return before(ctx, conn), nil }
	}
	cfg.PrepareConn = func(ctx context.Context, conn *pgx.Conn) (bool, error) {
		if prepare != nil {
			if ok, err := prepare(ctx, conn); !ok || err != nil {
				return ok, err
			}
		}
		if conn.PgConn().CustomData()[identityUnchecked] == nil {
			return true, nil
		}
		checked, _, err := checkIdentity(ctx, conn, by)
		if err != nil {
			return false, err
		}
		if checked {
			delete(conn.PgConn().CustomData(), identityUnchecked)
		}
		return true, nil
	}
}

// takePromotionAdvance removes fenced_promotion_advance from the parsed
// URL's runtime parameters (it is no server setting) and installs it.
func takePromotionAdvance(cfg *pgxpool.Config) error {
	v, ok := cfg.ConnConfig.RuntimeParams[promotionAdvanceParam]
	if !ok {
		return nil
	}
	delete(cfg.ConnConfig.RuntimeParams, promotionAdvanceParam)
	by, err := strconv.ParseInt(v, 10, 64)
	if err != nil || by < 1 || by > 1<<40 {
		return fencedtype.Invalid("database url", "%s=%q is not a whole number from 1 to 2^40", promotionAdvanceParam, v)
	}
	AdvanceOnPromotion(cfg, by)
	return nil
}

// systemIdentifierSQL reads the cluster's system identifier. It is a
// statement of its own: a role without EXECUTE on pg_control_system() is
// refused when the statement starts, whatever would guard the call.
const systemIdentifierSQL = `SELECT system_identifier FROM pg_catalog.pg_control_system()`

// serverIdentitySQL is the identity of the database a connection reached,
// as fenced_meta records it, but for fenced_meta's own oid (m.tableoid):
// the timeline is the first eight hex digits of the current WAL file's
// name (NULL on a standby, which has no current WAL file), $1 the system
// identifier systemIdentifierSQL read (NULL when it could not).
const serverIdentitySQL = `
SELECT CASE WHEN NOT pg_is_in_recovery()
            THEN ('x' || left(pg_walfile_name(pg_current_wal_lsn()), 8))::bit(32)::bigint END AS timeline,
       $1::bigint AS system_identifier,
       (SELECT oid::bigint FROM pg_catalog.pg_database WHERE datname = current_database()) AS database_oid`

// identityDiffersSQL holds when fenced_meta m records another identity
// than the server's s, or none: a NULL recorded differs from any value
// read. A system identifier that could not be read is not compared.
const identityDiffersSQL = `(m.timeline IS DISTINCT FROM s.timeline
    OR m.database_oid IS DISTINCT FROM s.database_oid
    OR m.meta_oid IS DISTINCT FROM m.tableoid::bigint
    OR m.system_identifier IS DISTINCT FROM COALESCE(s.system_identifier, m.system_identifier))`

// identityCheckSQL is the check every new connection makes, without locks:
// whether it reached a primary, and whether the identity recorded differs.
// Only a transaction that advanced can have recorded the server's identity,
// so a connection that reads it recorded needs nothing more.
const identityCheckSQL = `SELECT s.timeline IS NOT NULL, ` + identityDiffersSQL + `
FROM fenced_meta m, (` + serverIdentitySQL + `) s`

// identityRecordSQL records the server's identity if it differs from the
// one recorded. It is the condition of the advance: run under
// lockFenceTables's lock, a second connection that waited for the first
// finds the identity recorded and updates nothing, so it does not advance
// again.
const identityRecordSQL = `
UPDATE fenced_meta m SET timeline = s.timeline, system_identifier = s.system_identifier,
    database_oid = s.database_oid, meta_oid = m.tableoid::bigint
FROM (` + serverIdentitySQL + `) s
WHERE s.timeline IS NOT NULL AND ` + identityDiffersSQL

// readSystemIdentifier reads the cluster's system identifier, or nil when
// the role may not read it (or the server has no pg_control_system()).
func readSystemIdentifier(ctx context.Context, q querier) (*int64, error) {
	var id int64
	err := q.QueryRow(ctx, systemIdentifierSQL).Scan(&id)
	var pe *pgconn.PgError
	if errors.As(err, &pe) && (pe.Code == "42501" || pe.Code == "42883") {
		return nil, nil // insufficient_privilege, undefined_function
	}
	if err != nil {
		return nil, fmt.Errorf("read the system identifier: %w", err)
	}
	return &id, nil
}

// checkIdentity compares the database's identity with the one recorded,
// and when they differ advances fences by `by` and records it, in one
// transaction; it reports the floor it advanced to (0 when it did not).
// checked is false when it could not check: on a standby (nothing is
// granted through it) and on a database not migrated yet.
func checkIdentity(ctx context.Context, conn *pgx.Conn, by int64) (checked bool, floor int64, err error) {
	sysid, err := readSystemIdentifier(ctx, conn)
	if err != nil {
		return false, 0, fmt.Errorf("check the database's identity: %w", err)
	}
	var primary, differs bool
	err = conn.QueryRow(ctx, identityCheckSQL, sysid).Scan(&primary, &differs)
	var pe *pgconn.PgError
	if errors.As(err, &pe) && (pe.Code == "42P01" || pe.Code == "42703") {
		return false, 0, nil // undefined table or column: not migrated yet
	}
	if err != nil {
		return false, 0, fmt.Errorf("check the database's identity: %w", err)
	}
	if !primary || !differs {
		return primary, 0, nil
	}
	// Its own settings, whatever the session's (the hooks that set them
	// may run after this one): the advance must commit durably, and decide
	// on the row it waited for.
	err = pgx.BeginTxFunc(ctx, conn, pgx.TxOptions{IsoLevel: pgx.ReadCommitted}, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `SET LOCAL synchronous_commit = on`); err != nil {
			return err
		}
		sems, err := lockFenceTables(ctx, tx)
		if err != nil {
			return err
		}
		tag, err := tx.Exec(ctx, identityRecordSQL, sysid)
		if err != nil || tag.RowsAffected() == 0 {
			return err // recorded by a connection this one waited for
		}
		floor, err = raiseFences(ctx, tx, by, sems)
		return err
	})
	if err != nil {
		return false, 0, fmt.Errorf("advance fences on a new database identity: %w", err)
	}
	return true, floor, nil
}
