package mysqldriver

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/fenced/fenced/driver"
	"github.com/fenced/fenced/driver/internal/sqldb"
	"github.com/fenced/fenced/fencedtype"
)

// KEY is a reserved word in MySQL, so the column is quoted; Go raw strings
// cannot hold the backquotes, hence the double-quoted SQL in this file.

// resourceUpdateSQL stores the value iff the writer's fence is at least the
// stored one: for an existing key the whole decision is this statement.
// LAST_INSERT_ID(expr) hands the new version back in the OK packet, the one
// integer MySQL can return from an UPDATE. Parameters: value, fence, key,
// fence.
const resourceUpdateSQL = "UPDATE fenced_resources SET value = ?, fence = ?, version = LAST_INSERT_ID(version + 1), " +
	"updated_at = " + now + " WHERE `key` = ? AND fence <= ?"

// resourceInsertSQL creates a key's first version; a concurrent creator
// makes it fail with a duplicate key, and the write is decided again.
const resourceInsertSQL = "INSERT INTO fenced_resources (`key`, value, fence, version, updated_at) VALUES (?, ?, ?, 1, " + now + ")"

// resourceFenceSQL reads the stored fence that refused a write (locking, so
// it is the latest committed one).
const resourceFenceSQL = "SELECT fence FROM fenced_resources WHERE `key` = ? LOCK IN SHARE MODE"

// resourceOpClaimSQL records the operation id first; a concurrent repeat
// waits on the primary key and then fails as a duplicate, and reads the
// recorded outcome.
const resourceOpClaimSQL = "INSERT INTO fenced_resource_ops (`key`, op_id, fence, digest, created_at) VALUES (?, ?, ?, ?, " + now + ")"

const resourceOpRecordSQL = "UPDATE fenced_resource_ops SET accepted = ?, version = ?, current_fence = ? WHERE `key` = ? AND op_id = ?"

const resourceOpGetSQL = "SELECT fence, accepted, version, current_fence, digest FROM fenced_resource_ops WHERE `key` = ? AND op_id = ? LOCK IN SHARE MODE"

const readResourceSQL = "SELECT `key`, value, fence, version, updated_at FROM fenced_resources WHERE `key` = ?"

// WriteResource implements driver.Driver. Without an operation id it runs
// outside a transaction: each statement decides on its own.
func (d *Driver) WriteResource(ctx context.Context, p driver.WriteResourceParams) (*fencedtype.ResourceWrite, error) {
	if p.Value == nil {
		p.Value = []byte{} // nil would be sent as NULL
	}
	if p.OperationID == "" {
		res, err := resourceWrite(ctx, d.db, p)
		if err != nil {
			return nil, fmt.Errorf("write resource %q: %w", p.Key, notMigrated(err))
		}
		return res.Result(p)
	}
	var res driver.ResourceOutcome
	err := d.inTx(ctx, func(tx *sql.Tx) error {
		res = driver.ResourceOutcome{}
		_, err := tx.ExecContext(ctx, resourceOpClaimSQL, p.Key, p.OperationID, p.Fence, driver.ResourceDigest(p))
		if isDuplicate(err) {
			res, err = driver.ReplayedOutcome(tx.QueryRowContext(ctx, resourceOpGetSQL, p.Key, p.OperationID), p)
			return err
		}
		if err != nil {
			return err
		}
		if res, err = resourceWrite(ctx, tx, p); err != nil {
			return err
		}
		_, err = tx.ExecContext(ctx, resourceOpRecordSQL, res.Accepted, res.Version, res.Current, p.Key, p.OperationID)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("write resource %q op %q: %w", p.Key, p.OperationID, err)
	}
	return res.Result(p)
}

// resourceWrite decides one write: the conditional update, or for a new key
// the insert. A refusal is read back as the stored fence, which can only
// have grown since; if the key appeared or its fence is not above the
// writer's after all (the row was created in between), it decides again.
func resourceWrite(ctx context.Context, q sqldb.Querier, p driver.WriteResourceParams) (driver.ResourceOutcome, error) {
	o := driver.ResourceOutcome{Fence: p.Fence}
	for range 100 {
		res, err := q.ExecContext(ctx, resourceUpdateSQL, p.Value, p.Fence, p.Key, p.Fence)
		if err != nil {
			return o, err
		}
		if n, err := res.RowsAffected(); err != nil || n == 1 {
			o.Accepted = err == nil
			o.Version, _ = res.LastInsertId()
			return o, err
		}
		err = q.QueryRowContext(ctx, resourceFenceSQL, p.Key).Scan(&o.Current)
		switch {
		case err == nil && o.Current > p.Fence:
			return o, nil
		case err == nil:
			continue
		case !errors.Is(err, sql.ErrNoRows):
			return o, err
		}
		if _, err = q.ExecContext(ctx, resourceInsertSQL, p.Key, p.Value, p.Fence); err == nil {
			o.Accepted, o.Version = true, 1
			return o, nil
		} else if !isDuplicate(err) {
			return o, err
		}
	}
	return o, fmt.Errorf("the key kept changing while being written")
}

// ReadResource implements driver.Driver.
func (d *Driver) ReadResource(ctx context.Context, key string) (*fencedtype.Resource, error) {
	var r fencedtype.Resource
	var updated dbTime
	err := d.db.QueryRowContext(ctx, readResourceSQL, key).Scan(&r.Key, &r.Value, &r.Fence, &r.Version, &updated)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, fencedtype.ErrNotFound
	}
	if err != nil {
		return nil, fmt.Errorf("get resource %q: %w", key, notMigrated(err))
	}
	r.UpdatedAt = updated.Time
	if r.Value == nil {
		r.Value = []byte{}
	}
	return &r, nil
}
