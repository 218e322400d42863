package sqlitedriver

import (
	"context"
	"database/sql"
	"embed"
	"fmt"

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
func (d *Driver) Migrate(ctx context.Context) ([]int, error) {
	all, err := migrations.Load(migrationFiles, "migrations")
	if err != nil {
		return nil, err
	}
	var applied []int
	err = d.writeTx(ctx, func(tx *sql.Tx) error {
		if _, err := tx.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS fenced_schema_migrations (
			version    INTEGER PRIMARY KEY,
			name       TEXT    NOT NULL,
			applied_us INTEGER NOT NULL) STRICT`); err != nil {
			return err
		}
		done, err := sqldb.All(ctx, tx, sqldb.Value[int], `SELECT version FROM fenced_schema_migrations`)
		if err != nil {
			return err
		}
		applied, err = migrations.Apply(migrations.Pending(all, done),
			`INSERT INTO fenced_schema_migrations (version, name, applied_us) VALUES (?, ?, `+nowUS+`)`,
			func(query string, args ...any) error { _, err := tx.ExecContext(ctx, query, args...); return err })
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("migrate sqlite: %w", err)
	}
	return applied, nil
}
