package mysqldriver

import (
	"context"
	"database/sql"
	"fmt"
)

// durability is what the server's global settings say about a commit
// reported done: whether it survives a crash of the server or of its host
// (a power loss, a kernel crash). A grant lost in a crash would be granted
// again, to another holder, under the same fence.
type durability struct {
	FlushLog   sql.NullInt64 // innodb_flush_log_at_trx_commit
	LogBin     bool          // log_bin: the server writes a binary log
	SyncBinlog sql.NullInt64 // sync_binlog
}

// durabilitySQL reads the settings durability holds. All are global:
// unlike PostgreSQL's synchronous_commit, no session can change them, so
// the driver cannot raise them for its own sessions; it can only refuse.
const durabilitySQL = `SELECT @@GLOBAL.innodb_flush_log_at_trx_commit, @@GLOBAL.log_bin, @@GLOBAL.sync_binlog`

// readDurability reads the server's durability settings.
func readDurability(ctx context.Context, db *sql.DB) (durability, error) {
	var d durability
	if err := db.QueryRowContext(ctx, durabilitySQL).Scan(&d.FlushLog, &d.LogBin, &d.SyncBinlog); err != nil {
		return d, fmt.Errorf("read innodb_flush_log_at_trx_commit, log_bin and sync_binlog: %w", err)
	}
	return d, nil
}

// refusal says why a server with these settings can lose a commit it
// reported done, or returns nil when it cannot:
//   - innodb_flush_log_at_trx_commit must be 1, or MariaDB's 3 (flushed at
//     prepare and again at commit); 0 and 2 flush InnoDB's log about once a
//     second.
//   - With the binary log on, a commit is the binary log's: InnoDB flushes
//     the transaction at prepare only, and crash recovery commits a prepared
//     transaction iff its events are in the binary log. sync_binlog=0 leaves
//     syncing the binary log to the operating system and N > 1 syncs it
//     after every N commit groups, so a crash of the host (not of the
//     server alone: the events were written) loses commits already
//     reported, unless InnoDB also flushed them at commit (MariaDB's
//     innodb_flush_log_at_trx_commit=3).
func (d durability) refusal() error {
	if d.FlushLog.Valid && d.FlushLog.Int64 != 1 && d.FlushLog.Int64 != 3 {
		return fmt.Errorf("the server runs with innodb_flush_log_at_trx_commit=%d, so a commit can be lost in a crash "+
			"and a fence granted twice; fenced needs it set to 1", d.FlushLog.Int64)
	}
	if d.LogBin && d.SyncBinlog.Valid && d.SyncBinlog.Int64 != 1 && !(d.FlushLog.Valid && d.FlushLog.Int64 == 3) {
		return fmt.Errorf("the server writes a binary log (log_bin=ON) with sync_binlog=%d, so a commit whose binary log "+
			"events were not yet on disk is rolled back after a crash of its host, and a fence granted twice; "+
			"fenced needs sync_binlog=1 (or, on MariaDB, innodb_flush_log_at_trx_commit=3)", d.SyncBinlog.Int64)
	}
	return nil
}

// checkDurable refuses a server that can lose a commit it reported done.
func checkDurable(ctx context.Context, db *sql.DB) error {
	d, err := readDurability(ctx, db)
	if err != nil {
		return err
	}
	return d.refusal()
}
