package sqlitedriver

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/fenced/fenced/driver"
	"github.com/fenced/fenced/fencedtype"
)

// writeResourceSQL stores the value iff the writer's fence is at least the
// stored one: the whole decision is this one statement.
const writeResourceSQL = `
INSERT INTO fenced_resources AS r (key, value, fence, version, updated_us)
VALUES (?1, ?2, ?3, 1, ` + nowUS + `)
ON CONFLICT (key) DO UPDATE SET
    value = excluded.value, fence = excluded.fence, version = r.version + 1, updated_us = excluded.updated_us
WHERE r.fence <= excluded.fence
RETURNING fence, version`

const resourceOpClaimSQL = `
INSERT INTO fenced_resource_ops (key, op_id, fence, digest, created_us) VALUES (?1, ?2, ?3, ?4, ` + nowUS + `)
ON CONFLICT (key, op_id) DO NOTHING`

const resourceOpRecordSQL = `
UPDATE fenced_resource_ops SET accepted = ?3, version = ?4, current_fence = ?5
WHERE key = ?1 AND op_id = ?2`

const resourceOpGetSQL = `
SELECT fence, accepted, version, current_fence, digest FROM fenced_resource_ops WHERE key = ?1 AND op_id = ?2`

// WriteResource implements driver.Driver.
func (d *Driver) WriteResource(ctx context.Context, p driver.WriteResourceParams) (*fencedtype.ResourceWrite, error) {
	var res driver.ResourceOutcome
	err := d.writeTx(ctx, func(tx *sql.Tx) error {
		if p.OperationID != "" {
			r, err := tx.ExecContext(ctx, resourceOpClaimSQL, p.Key, p.OperationID, p.Fence, driver.ResourceDigest(p))
			if err != nil {
				return err
			}
			if n, err := r.RowsAffected(); err != nil || n == 0 {
				if err == nil {
					res, err = driver.ReplayedOutcome(tx.QueryRowContext(ctx, resourceOpGetSQL, p.Key, p.OperationID), p)
				}
				return err
			}
		}
		var err error
		if res, err = resourceWrite(ctx, tx, p); err != nil || p.OperationID == "" {
			return err
		}
		_, err = tx.ExecContext(ctx, resourceOpRecordSQL, p.Key, p.OperationID, res.Accepted, res.Version, res.Current)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("write resource %q: %w", p.Key, err)
	}
	return res.Result(p)
}

func resourceWrite(ctx context.Context, tx *sql.Tx, p driver.WriteResourceParams) (driver.ResourceOutcome, error) {
	o := driver.ResourceOutcome{Fence: p.Fence}
	err := tx.QueryRowContext(ctx, writeResourceSQL, p.Key, p.Value, p.Fence).Scan(&o.Fence, &o.Version)
	if err == nil {
		o.Accepted = true
		return o, nil
	}
	if !errors.Is(err, sql.ErrNoRows) {
		return o, err
	}
	err = tx.QueryRowContext(ctx, `SELECT fence FROM fenced_resources WHERE key = ?1`, p.Key).Scan(&o.Current)
	return o, err
}

// ReadResource implements driver.Driver.
func (d *Driver) ReadResource(ctx context.Context, key string) (*fencedtype.Resource, error) {
	var r fencedtype.Resource
	var us int64
	err := d.db.QueryRowContext(ctx, `SELECT key, value, fence, version, updated_us FROM fenced_resources WHERE key = ?1`, key).
		Scan(&r.Key, &r.Value, &r.Fence, &r.Version, &us)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, fencedtype.ErrNotFound
	}
	if err != nil {
		return nil, fmt.Errorf("get resource %q: %w", key, notMigrated(err))
	}
	r.UpdatedAt = time.UnixMicro(us).UTC()
	return &r, nil
}
