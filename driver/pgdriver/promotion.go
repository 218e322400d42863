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

// Fences across a promotion that lost commits.
//
// A standby promoted without every commit of the old primary (asynchronous
// replication, or a synchronous standby that was not the one promoted) has
// lost the grants those commits made, and would grant their fences again:
// two holders of one fence. A promotion starts a new timeline, and so does a
// point-in-time restore. With fenced_promotion_advance=N in the URL (or
// AdvanceOnPromotion), every new connection compares the server's timeline
// with the one recorded in fenced_meta and, when they differ, advances every
// fence by N (as AdvanceFences does: leases end, job fences and ids jump) in
// the transaction that records the new one, before the connection is used.
// Every connection of every client goes through it, so no grant is made on
// the new timeline below the advanced floor. N must exceed the fences that
// can have been lost: the grants and claims of the replication lag.

// promotionAdvanceParam is the URL parameter that sets the advance.
const promotionAdvanceParam = "fenced_promotion_advance"

// AdvanceOnPromotion makes every connection of cfg advance fences by `by`
// when it finds the server on another timeline than the one recorded (see
// the package documentation). ParseURL calls it for
// fenced_promotion_advance=N.
func AdvanceOnPromotion(cfg *pgxpool.Config, by int64) {
	after := cfg.AfterConnect
	cfg.AfterConnect = func(ctx context.Context, conn *pgx.Conn) error {
		if after != nil {
			if err := after(ctx, conn); err != nil {
				return err
			}
		}
		_, err := checkTimeline(ctx, conn, by)
		return err
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

// checkTimeline records the server's timeline, advancing fences first when
// it differs from the recorded one; it reports the floor it advanced to (0
// when it did not). A standby (no writes) and a database not yet migrated
// are left alone: nothing is granted through either.
func checkTimeline(ctx context.Context, conn *pgx.Conn, by int64) (floor int64, err error) {
	var walFile *string
	err = conn.QueryRow(ctx, `SELECT CASE WHEN pg_is_in_recovery() THEN NULL ELSE pg_walfile_name(pg_current_wal_lsn()) END`).Scan(&walFile)
	if err != nil || walFile == nil {
		return 0, err
	}
	// A WAL file's name starts with its timeline, eight hex digits.
	tl, err := strconv.ParseInt((*walFile)[:8], 16, 64)
	if err != nil {
		return 0, fmt.Errorf("timeline of WAL file %q: %w", *walFile, err)
	}
	// Its own settings, whatever the session's (the hooks that set them
	// may run after this one): the advance must commit durably, and decide
	// on the row it locked.
	err = pgx.BeginTxFunc(ctx, conn, pgx.TxOptions{IsoLevel: pgx.ReadCommitted}, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `SET LOCAL synchronous_commit = on`); err != nil {
			return err
		}
		var recorded *int64
		if err := tx.QueryRow(ctx, `SELECT timeline FROM fenced_meta FOR UPDATE`).Scan(&recorded); err != nil {
			return err
		}
		if recorded != nil && *recorded == tl {
			return nil
		}
		if recorded != nil {
			if floor, err = advanceFences(ctx, tx, by); err != nil {
				return err
			}
		}
		_, err := tx.Exec(ctx, `UPDATE fenced_meta SET timeline = $1`, tl)
		return err
	})
	var pe *pgconn.PgError
	if errors.As(err, &pe) && (pe.Code == "42P01" || pe.Code == "42703") {
		return 0, nil // undefined table or column: not migrated yet
	}
	if err != nil {
		return 0, fmt.Errorf("check the timeline for a promotion: %w", err)
	}
	return floor, nil
}
