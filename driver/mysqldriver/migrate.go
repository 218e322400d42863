package mysqldriver

import (
	"context"
	"database/sql"
	"embed"
	"fmt"
	"time"

	"github.com/fenced/fenced/driver/internal/sqldb"
	"github.com/fenced/fenced/driver/migrations"
	"github.com/go-sql-driver/mysql"
)

//go:embed migrations/*.sql
var migrationFiles embed.FS

// migrateLockSQL takes the server-wide named lock that serialises migrators
// of this database. Lock names are global to the server (and at most 64
// characters), so the name carries a hash of the database name.
const (
	migrateLockSQL   = `SELECT GET_LOCK(CONCAT('fenced_migrate_', MD5(DATABASE())), 5)`
	migrateUnlockSQL = `DO RELEASE_LOCK(CONCAT('fenced_migrate_', MD5(DATABASE())))`
)

// Migrate applies pending migrations under a named lock (GET_LOCK), so
// concurrent migrators wait for each other. DDL commits implicitly in MySQL,
// so a migration is not one transaction: every statement in the files is
// idempotent, and one cut short is run again whole. The files hold several
// statements, so they run on a connection of their own with
// multiStatements, the only one that has it.
func (d *Driver) Migrate(ctx context.Context) ([]int, error) {
	all, err := migrations.Load(migrationFiles, "migrations")
	if err != nil {
		return nil, err
	}
	cfg := d.cfg.Clone()
	cfg.MultiStatements = true
	connector, err := mysql.NewConnector(cfg)
	if err != nil {
		return nil, fmt.Errorf("migrate mysql: %w", err)
	}
	db := sql.OpenDB(connector)
	defer db.Close()
	conn, err := db.Conn(ctx)
	if err != nil {
		return nil, fmt.Errorf("migrate mysql: %w", err)
	}
	defer conn.Close()
	if err := lockMigrations(ctx, conn); err != nil {
		return nil, fmt.Errorf("migrate mysql: %w", err)
	}
	defer conn.ExecContext(context.Background(), migrateUnlockSQL)
	applied, err := migrate(ctx, conn, all)
	if err != nil {
		return nil, fmt.Errorf("migrate mysql: %w", err)
	}
	return applied, nil
}

// PendingMigrations implements driver.Driver.
func (d *Driver) PendingMigrations(ctx context.Context) ([]int, error) {
	done, err := sqldb.All(ctx, d.db, sqldb.Value[int], `SELECT version FROM fenced_schema_migrations`)
	if isMySQLError(err, errNoSuchTable) { // never migrated
		done, err = nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read applied migrations: %w", err)
	}
	return migrations.PendingVersions(migrationFiles, "migrations", done)
}

// lockMigrations waits for the migration lock, a few seconds at a time so
// that ctx is honoured.
func lockMigrations(ctx context.Context, conn *sql.Conn) error {
	for {
		var got sql.NullInt64
		if err := conn.QueryRowContext(ctx, migrateLockSQL).Scan(&got); err != nil {
			return err
		}
		if got.Valid && got.Int64 == 1 {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(10 * time.Millisecond):
		}
	}
}

func migrate(ctx context.Context, conn *sql.Conn, all []migrations.Migration) ([]int, error) {
	if _, err := conn.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS fenced_schema_migrations (
		version    INT          NOT NULL PRIMARY KEY,
		name       VARCHAR(100) NOT NULL,
		applied_at DATETIME(6)  NOT NULL
	) ENGINE = InnoDB DEFAULT CHARSET = utf8mb4`); err != nil {
		return nil, err
	}
	done, err := sqldb.All(ctx, conn, sqldb.Value[int], `SELECT version FROM fenced_schema_migrations`)
	if err != nil {
		return nil, err
	}
	return migrations.Apply(migrations.Pending(all, done),
		`INSERT INTO fenced_schema_migrations (version, name, applied_at) VALUES (?, ?, `+now+`)`,
		func(query string, args ...any) error { _, err := conn.ExecContext(ctx, query, args...); return err })
}
