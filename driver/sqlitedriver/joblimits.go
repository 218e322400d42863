package sqlitedriver

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/fenced/fenced/driver"
	"github.com/fenced/fenced/driver/internal/sqldb"
	"github.com/fenced/fenced/fencedtype"
)

// claimLimitedPickSQL picks the candidates of a limited claim: eligible
// queued jobs in claim order whose key is not full and whose sequence is
// not blocked (driver.JobClaimableSQL); none when the queue is paused
// (queueNotPausedSQLite). %s is the kind filter (?3).
// Parameters: ?1 queue, ?2 window.
const claimLimitedPickSQL = `
SELECT j.id FROM fenced_jobs j
WHERE j.state = 'queued' AND j.queue = ?1 AND j.run_at_us <= ` + nowUS + `%s
    AND ` + queueNotPausedSQLite + `
    AND %s
ORDER BY j.priority, j.run_at_us, j.id
LIMIT ?2`

// The limited pick of each kind filter.
var (
	claimLimitedPickAnyKindSQL = fmt.Sprintf(claimLimitedPickSQL, "", driver.JobClaimableSQL)
	claimLimitedPickOneKindSQL = fmt.Sprintf(claimLimitedPickSQL, " AND j.kind = ?3", driver.JobClaimableSQL)
	claimLimitedPickOfKindsSQL = fmt.Sprintf(claimLimitedPickSQL, " AND j.kind IN (SELECT value FROM json_each(?3))", driver.JobClaimableSQL)
)

// claimLimitLoadSQL reads the candidates (?1, a JSON array of ids): each
// one's key limit, its key's running attempts and whether its sequence is
// blocked, in claim order.
var claimLimitLoadSQL = `SELECT ` + driver.JobClaimLoadColumns + `
FROM fenced_jobs j WHERE j.id IN (SELECT value FROM json_each(?1)) AND j.state = 'queued'
ORDER BY j.priority, j.run_at_us, j.id`

// claimLimitedStartSQL starts the admitted candidates. Parameters: ?1
// queue, ?2 owner, ?3 the ids (a JSON array), ?4 ttl_us.
const claimLimitedStartSQL = `
UPDATE fenced_jobs SET
    state = 'running', attempt = attempt + 1, fence = fence + 1, owner = ?2,
    lease_expires_us = ` + nowUS + ` + ?4,
    attempted_us = ` + nowUS + `, updated_us = ` + nowUS + `,
    cancel_requested = 0, progress = NULL
WHERE id IN (SELECT value FROM json_each(?3)) AND queue = ?1 AND state = 'queued'
RETURNING ` + jobColumns

// sqliteParams rewrites the shared statements' $1 into SQLite's ?1.
func sqliteParams(query string) string { return strings.ReplaceAll(query, "$1", "?1") }

// claimLimitedJobs is the claim of a queue gated by keys or limits (see
// driver/claimlimits.go). SQLite has one writer: in one write transaction
// nothing can change between the reads and the start, so it needs no lock
// of its own. kinds is the kind filter's argument (nil for none).
func (d *Driver) claimLimitedJobs(ctx context.Context, p driver.ClaimJobsParams, kinds any) ([]*fencedtype.Job, error) {
	pick, args := claimLimitedPickAnyKindSQL, []any{p.Queue, driver.ClaimWindow(p.Limit)}
	switch len(p.Kinds) {
	case 0:
	case 1:
		pick, args = claimLimitedPickOneKindSQL, append(args, kinds)
	default:
		pick, args = claimLimitedPickOfKindsSQL, append(args, kinds)
	}
	var jobs []*fencedtype.Job
	err := d.writeTx(ctx, func(tx *sql.Tx) error {
		jobs = nil
		ids, err := sqldb.All(ctx, tx, sqldb.Value[int64], pick, args...)
		if err != nil || len(ids) == 0 {
			return err
		}
		idsJSON, err := json.Marshal(ids)
		if err != nil {
			return err
		}
		cands, err := sqldb.All(ctx, tx, func(r sqldb.Scanner) (driver.ClaimCandidate, error) {
			return driver.ScanClaimCandidate(r)
		}, claimLimitLoadSQL, string(idsJSON))
		if err != nil {
			return err
		}
		var load driver.ClaimLoad
		if err := readClaimGlobals(ctx, tx, p.Queue, &load); err != nil {
			return err
		}
		admitted := driver.AdmitClaims(cands, load, p.Limit)
		if len(admitted) == 0 {
			return nil
		}
		admittedJSON, err := json.Marshal(admitted)
		if err != nil {
			return err
		}
		jobs, err = sqldb.All(ctx, tx, scanJob, claimLimitedStartSQL, p.Queue, p.Owner, string(admittedJSON), p.TTL.Microseconds())
		if err == nil && len(jobs) != len(admitted) {
			err = fmt.Errorf("started %d of %d admitted jobs", len(jobs), len(admitted))
		}
		return err
	})
	if err != nil {
		return nil, err
	}
	return jobs, nil
}

// readClaimGlobals reads the queue's global limits into load and, when it
// has any, its running jobs by kind.
func readClaimGlobals(ctx context.Context, tx *sql.Tx, queue string, load *driver.ClaimLoad) error {
	type kindCount struct {
		kind string
		n    int
	}
	scan := func(r sqldb.Scanner) (kindCount, error) {
		var k kindCount
		return k, r.Scan(&k.kind, &k.n)
	}
	globals, err := sqldb.All(ctx, tx, scan, sqliteParams(driver.JobGlobalLimitsSQL), queue)
	if err != nil || len(globals) == 0 {
		return err
	}
	for _, g := range globals {
		load.AddGlobal(g.kind, g.n)
	}
	running, err := sqldb.All(ctx, tx, scan, sqliteParams(driver.JobRunningByKindSQL), queue)
	for _, r := range running {
		load.AddRunning(r.kind, r.n)
	}
	return err
}

// setJobLimitSQL stores a limit, replacing the one of its scope.
const setJobLimitSQL = `
INSERT INTO fenced_job_limits (queue, kind, concurrency_key, per_key_limit, global_limit, updated_us)
VALUES (?1, ?2, ?3, ?4, ?5, ` + nowUS + `)
ON CONFLICT (queue, kind, concurrency_key) DO UPDATE SET
    per_key_limit = excluded.per_key_limit, global_limit = excluded.global_limit, updated_us = excluded.updated_us
RETURNING queue, kind, concurrency_key, per_key_limit, global_limit`

func scanJobLimit(r sqldb.Scanner) (fencedtype.JobLimit, error) {
	var l fencedtype.JobLimit
	return l, r.Scan(&l.Queue, &l.Kind, &l.ConcurrencyKey, &l.PerKey, &l.Global)
}

// SetJobLimit implements driver.JobDriver.
func (d *Driver) SetJobLimit(ctx context.Context, l fencedtype.JobLimit) (*fencedtype.JobLimit, error) {
	var out fencedtype.JobLimit
	err := d.writeTx(ctx, func(tx *sql.Tx) (err error) {
		out, err = sqldb.One(ctx, tx, scanJobLimit, setJobLimitSQL, l.Queue, l.Kind, l.ConcurrencyKey, l.PerKey, l.Global)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("set job limit: %w", err)
	}
	return &out, nil
}

// deleteJobLimitSQL deletes the limit of one scope.
const deleteJobLimitSQL = `DELETE FROM fenced_job_limits WHERE queue = ?1 AND kind = ?2 AND concurrency_key = ?3`

// DeleteJobLimit implements driver.JobDriver.
func (d *Driver) DeleteJobLimit(ctx context.Context, queue, kind, key string) error {
	var n int64
	err := d.writeTx(ctx, func(tx *sql.Tx) (err error) {
		n, err = sqldb.Exec(ctx, tx, deleteJobLimitSQL, queue, kind, key)
		return err
	})
	if err != nil {
		return fmt.Errorf("delete job limit: %w", err)
	}
	if n == 0 {
		return fencedtype.ErrNotFound
	}
	return nil
}

// listJobLimitsSQL lists the limits of queue ?1, every queue when empty.
const listJobLimitsSQL = `
SELECT queue, kind, concurrency_key, per_key_limit, global_limit FROM fenced_job_limits
WHERE ?1 = '' OR queue = ?1
ORDER BY queue, kind, concurrency_key`

// ListJobLimits implements driver.JobDriver.
func (d *Driver) ListJobLimits(ctx context.Context, queue string) ([]fencedtype.JobLimit, error) {
	out, err := sqldb.All(ctx, d.db, scanJobLimit, listJobLimitsSQL, queue)
	if err != nil {
		return nil, fmt.Errorf("list job limits: %w", notMigrated(err))
	}
	return out, nil
}
