package sqlitedriver

import (
	"context"
	"database/sql"
	sqldriver "database/sql/driver"
	"embed"
	"errors"
	"fmt"
	"math"

	"github.com/fenced/fenced/driver/internal/sqldb"
	"github.com/fenced/fenced/driver/migrations"
)

//go:embed migrations/*.sql
var migrationFiles embed.FS

// PendingMigrations implements driver.Driver.
func (d *Driver) PendingMigrations(ctx context.Context) ([]int, error) {
	var done []int
	exists, err := sqldb.One(ctx, d.db, sqldb.Value[bool],
		`SELECT EXISTS (SELECT 1 FROM sqlite_schema WHERE type = 'table' AND name = 'fenced_schema_migrations')`)
	if err == nil && exists {
		done, err = sqldb.All(ctx, d.db, sqldb.Value[int], `SELECT version FROM fenced_schema_migrations`)
	}
	if err != nil {
		return nil, fmt.Errorf("read applied migrations: %w", err)
	}
	return migrations.PendingVersions(migrationFiles, "migrations", done)
}

// Migrate applies pending migrations in one IMMEDIATE transaction, so
// concurrent migrators (other processes too) wait for each other.
//
// The transaction runs on a connection of its own with foreign keys off,
// as SQLite's procedure for a change ALTER TABLE cannot make requires: a
// migration that rebuilds a table drops the old one, and with foreign keys
// on that would delete the rows that refer to it (a job's attempts). Before
// it commits, PRAGMA foreign_key_check must find no row without its parent;
// the connection has foreign keys on again before it goes back to the pool,
// or is closed.
func (d *Driver) Migrate(ctx context.Context) ([]int, error) { return d.migrateTo(ctx, math.MaxInt) }

// migrateTo is Migrate applying the pending migrations up to version last
// only (tests migrate a database as an older release left it).
func (d *Driver) migrateTo(ctx context.Context, last int) ([]int, error) {
	all, err := migrations.Load(migrationFiles, "migrations")
	if err != nil {
		return nil, err
	}
	for len(all) > 0 && all[len(all)-1].Version > last {
		all = all[:len(all)-1]
	}
	var applied []int
	err = d.write(ctx, func() error {
		return d.withoutForeignKeys(ctx, func(conn *sql.Conn) error {
			tx, err := beginImmediate(ctx, conn)
			if err != nil {
				return err
			}
			return sqldb.Run(tx, func(tx *sql.Tx) error {
				applied, err = migrate(ctx, tx, all)
				if err != nil {
					return err
				}
				return foreignKeysHold(ctx, tx)
			})
		})
	})
	if err != nil {
		return nil, fmt.Errorf("migrate sqlite: %w", err)
	}
	return applied, nil
}

// migrate applies the migrations of all that fenced_schema_migrations does
// not list, recording each, inside tx.
func migrate(ctx context.Context, tx *sql.Tx, all []migrations.Migration) ([]int, error) {
	if _, err := tx.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS fenced_schema_migrations (
		version    INTEGER PRIMARY KEY,
		name       TEXT    NOT NULL,
		applied_us INTEGER NOT NULL) STRICT`); err != nil {
		return nil, err
	}
	done, err := sqldb.All(ctx, tx, sqldb.Value[int], `SELECT version FROM fenced_schema_migrations`)
	if err != nil {
		return nil, err
	}
	return migrations.Apply(migrations.Pending(all, done),
		`INSERT INTO fenced_schema_migrations (version, name, applied_us) VALUES (?, ?, `+nowUS+`)`,
		func(query string, args ...any) error { _, err := tx.ExecContext(ctx, query, args...); return err })
}

// withoutForeignKeys runs fn on a connection of the pool whose foreign
// keys are off (SQLite ignores the pragma inside a transaction, so it is
// set before fn begins one). The connection gets them back before it
// returns to the pool; when that fails it is closed instead.
func (d *Driver) withoutForeignKeys(ctx context.Context, fn func(*sql.Conn) error) error {
	conn, err := d.db.Conn(ctx)
	if err != nil {
		return err
	}
	defer conn.Close()
	if _, err := conn.ExecContext(ctx, `PRAGMA foreign_keys = OFF`); err != nil {
		return err
	}
	err = fn(conn)
	if _, onErr := conn.ExecContext(context.WithoutCancel(ctx), `PRAGMA foreign_keys = ON`); onErr != nil {
		conn.Raw(func(any) error { return sqldriver.ErrBadConn }) // discarded, not pooled
		return errors.Join(err, fmt.Errorf("turn foreign keys back on: %w", onErr))
	}
	return err
}

// foreignKeysHold fails if some row refers to a row that does not exist,
// as PRAGMA foreign_key_check finds them.
func foreignKeysHold(ctx context.Context, tx *sql.Tx) error {
	rows, err := tx.QueryContext(ctx, `PRAGMA foreign_key_check`)
	if err != nil {
		return err
	}
	defer rows.Close()
	if rows.Next() {
		var table, parent string
		var rowid sql.NullInt64
		var fk int
		if err := rows.Scan(&table, &rowid, &parent, &fk); err != nil {
			return err
		}
		return fmt.Errorf("a row of %s refers to a row of %s that does not exist", table, parent)
	}
	return rows.Err()
}
