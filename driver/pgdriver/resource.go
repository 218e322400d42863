package pgdriver

import (
	"context"
	"errors"
	"fmt"

	"github.com/fenced/fenced/driver"
	"github.com/fenced/fenced/fencedtype"
	"github.com/jackc/pgx/v5"
)

// writeResourceSQL stores the value iff the writer's fence is at least the
// stored one: the whole decision is this one statement.
const writeResourceSQL = `
INSERT INTO fenced_resources AS r (key, value, fence, version, updated_at)
VALUES ($1, $2, $3, 1, clock_timestamp())
ON CONFLICT (key) DO UPDATE SET
    value = EXCLUDED.value, fence = EXCLUDED.fence, version = r.version + 1, updated_at = EXCLUDED.updated_at
WHERE r.fence <= EXCLUDED.fence
RETURNING r.fence, r.version`

// resourceOpClaimSQL records the operation id first; a concurrent repeat
// waits on the unique key and then finds the recorded outcome.
const resourceOpClaimSQL = `
INSERT INTO fenced_resource_ops (key, op_id, fence, digest) VALUES ($1, $2, $3, $4)
ON CONFLICT (key, op_id) DO NOTHING`

const resourceOpRecordSQL = `
UPDATE fenced_resource_ops SET accepted = $3, version = $4, current_fence = $5
WHERE key = $1 AND op_id = $2`

const resourceOpGetSQL = `
SELECT fence, accepted, version, current_fence, digest FROM fenced_resource_ops WHERE key = $1 AND op_id = $2`

const readResourceSQL = `SELECT key, value, fence, version, updated_at FROM fenced_resources WHERE key = $1`

// querier is what the pool and a transaction share.
type querier interface {
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}

// WriteResource implements driver.Driver.
func (d *Driver) WriteResource(ctx context.Context, p driver.WriteResourceParams) (*fencedtype.ResourceWrite, error) {
	if p.OperationID == "" {
		res, err := d.resourceWrite(ctx, d.pool, p)
		if err != nil {
			return nil, fmt.Errorf("write resource %q: %w", p.Key, err)
		}
		return res.Result(p)
	}
	var res driver.ResourceOutcome
	err := d.pool.inTx(ctx, func(tx pgx.Tx) error {
		tag, err := tx.Exec(ctx, resourceOpClaimSQL, p.Key, p.OperationID, p.Fence, driver.ResourceDigest(p))
		if err != nil {
			return err
		}
		if tag.RowsAffected() == 0 {
			res, err = driver.ReplayedOutcome(tx.QueryRow(ctx, resourceOpGetSQL, p.Key, p.OperationID), p)
			return err
		}
		if res, err = d.resourceWrite(ctx, tx, p); err != nil {
			return err
		}
		_, err = tx.Exec(ctx, resourceOpRecordSQL, p.Key, p.OperationID, res.Accepted, res.Version, res.Current)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("write resource %q op %q: %w", p.Key, p.OperationID, err)
	}
	return res.Result(p)
}

func (d *Driver) resourceWrite(ctx context.Context, q querier, p driver.WriteResourceParams) (driver.ResourceOutcome, error) {
	o := driver.ResourceOutcome{Fence: p.Fence}
	var err error
	if q == d.pool {
		err = d.pool.scanRow(ctx, []any{&o.Fence, &o.Version}, writeResourceSQL, p.Key, p.Value, p.Fence)
	} else {
		err = q.QueryRow(ctx, writeResourceSQL, p.Key, p.Value, p.Fence).Scan(&o.Fence, &o.Version)
	}
	if err == nil {
		o.Accepted = true
		return o, nil
	}
	if !errors.Is(err, pgx.ErrNoRows) {
		return o, err
	}
	err = q.QueryRow(ctx, `SELECT fence FROM fenced_resources WHERE key = $1`, p.Key).Scan(&o.Current)
	return o, err
}

// ReadResource implements driver.Driver.
func (d *Driver) ReadResource(ctx context.Context, key string) (*fencedtype.Resource, error) {
	var r fencedtype.Resource
	err := d.pool.QueryRow(ctx, readResourceSQL, key).Scan(&r.Key, &r.Value, &r.Fence, &r.Version, &r.UpdatedAt)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, fencedtype.ErrNotFound
	}
	if err != nil {
		return nil, fmt.Errorf("get resource %q: %w", key, err)
	}
	return &r, nil
}
