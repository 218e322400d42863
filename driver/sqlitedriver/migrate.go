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
		for _, m := range migrations.Pending(all, done) {
			if _, err := tx.ExecContext(ctx, m.SQL); err != nil {
				return fmt.Errorf("migration %d %s: %w", m.Version, m.Name, err)
			}
			if _, err := tx.ExecContext(ctx, `INSERT INTO fenced_schema_migrations (version, name, applied_us) VALUES (?, ?, `+nowUS+`)`, m.Version, m.Name); err != nil {
				return err
			}
			applied = append(applied, m.Version)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("migrate sqlite: %w", err)
	}
	return applied, nil
}
