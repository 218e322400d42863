package pgdriver

import (
	"context"
	"embed"
	"errors"
	"fmt"
	"slices"

	"github.com/fenced/fenced/driver/migrations"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

//go:embed migrations/*.sql
var migrationFiles embed.FS

// PendingMigrations implements driver.Driver.
func (d *Driver) PendingMigrations(ctx context.Context) ([]int, error) {
	rows, err := d.pool.Query(ctx, `SELECT version FROM fenced_schema_migrations`)
	var done []int
	if err == nil {
		done, err = pgx.CollectRows(rows, pgx.RowTo[int])
	}
	var pe *pgconn.PgError
	if errors.As(err, &pe) && pe.Code == "42P01" { // undefined_table: never migrated
		done, err = nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read applied migrations: %w", err)
	}
	return migrations.PendingVersions(migrationFiles, "migrations", done)
}

// Migrate applies pending migrations in one transaction under an advisory
// lock, so concurrent migrators wait for each other. The transaction is READ
// COMMITTED whatever the session default: under REPEATABLE READ its snapshot
// would be taken before the lock wait, and a waiting migrator would not see
// the versions the one before it recorded, and apply them again.
//
// The transaction that creates the schema records the database's identity
// (promotion.go) with it: the database is new, it has issued no fence yet,
// and a copy of it, however early, carries the identity of the database it
// was taken from.
func (d *Driver) Migrate(ctx context.Context) ([]int, error) {
	all, err := migrations.Load(migrationFiles, "migrations")
	if err != nil {
		return nil, err
	}
	sysid, err := readSystemIdentifier(ctx, d.pool)
	if err != nil {
		return nil, fmt.Errorf("migrate postgres: %w", err)
	}
	var applied []int
	err = pgx.BeginTxFunc(ctx, d.pool, pgx.TxOptions{IsoLevel: pgx.ReadCommitted}, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock(7390216455)`); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `CREATE TABLE IF NOT EXISTS fenced_schema_migrations (
			version    integer     PRIMARY KEY,
			name       text        NOT NULL,
			applied_at timestamptz NOT NULL DEFAULT clock_timestamp())`); err != nil {
			return err
		}
		rows, err := tx.Query(ctx, `SELECT version FROM fenced_schema_migrations`)
		if err != nil {
			return err
		}
		done, err := pgx.CollectRows(rows, pgx.RowTo[int])
		if err != nil {
			return err
		}
		applied, err = migrations.Apply(migrations.Pending(all, done),
			`INSERT INTO fenced_schema_migrations (version, name) VALUES ($1, $2)`,
			func(query string, args ...any) error { _, err := tx.Exec(ctx, query, args...); return err })
		if err != nil || !slices.Contains(applied, 1) {
			return err
		}
		_, err = tx.Exec(ctx, identityRecordSQL, sysid)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("migrate postgres: %w", err)
	}
	return applied, nil
}
