package mysqldriver_test

import (
	"database/sql"
	"strconv"
	"strings"
	"testing"

	"github.com/fenced/fenced/driver/mysqldriver"
	"github.com/fenced/fenced/internal/test/testdb"
)

// TestDurabilityIsReadFromTheServersVariables: the settings Open decides on
// are the server's, as SHOW GLOBAL VARIABLES names them, and Open opens the
// server iff they are durable. The server cannot be switched into a
// refused setting without changing it for every other session (or, for
// log_bin, restarting it), so the decision with this server's sync_binlog
// and the binary log on is checked as the decision alone;
// TestDurabilityRefusals checks every other combination.
func TestDurabilityIsReadFromTheServersVariables(t *testing.T) {
	t.Parallel()
	url := testdb.MySQL(t)
	db := openDB(t, url)
	got, err := mysqldriver.ReadDurability(ctx(t), db)
	must(t, err, "read durability")

	rows, err := db.QueryContext(ctx(t), `SHOW GLOBAL VARIABLES WHERE Variable_name IN ('innodb_flush_log_at_trx_commit', 'log_bin', 'sync_binlog')`)
	must(t, err, "show variables")
	defer rows.Close()
	shown := map[string]string{}
	for rows.Next() {
		var name, value string
		must(t, rows.Scan(&name, &value), "scan")
		shown[name] = value
	}
	must(t, rows.Err(), "show variables")
	number := func(name string) sql.NullInt64 {
		n, err := strconv.ParseInt(shown[name], 10, 64)
		if err != nil {
			t.Fatalf("%s = %q: %v", name, shown[name], err)
		}
		return sql.NullInt64{Int64: n, Valid: true}
	}
	want := mysqldriver.Durability{FlushLog: number("innodb_flush_log_at_trx_commit"), LogBin: shown["log_bin"] == "ON",
		SyncBinlog: number("sync_binlog")}
	if got != want {
		t.Fatalf("read %+v, the server shows %v", got, shown)
	}

	d, err := mysqldriver.Open(ctx(t), url)
	if refusal := mysqldriver.DurabilityRefusal(got); refusal != nil {
		if err == nil || !strings.Contains(err.Error(), refusal.Error()) {
			t.Fatalf("Open of a server with %v = %v, want refused: %v", shown, err, refusal)
		}
	} else if err != nil {
		t.Fatalf("Open of a server with %v: %v", shown, err)
	} else {
		d.Close()
	}
	t.Logf("this server: %v", shown)

	// The same server with its binary log on.
	withBinlog := got
	withBinlog.LogBin = true
	refusal := mysqldriver.DurabilityRefusal(withBinlog)
	if sync := got.SyncBinlog.Int64; sync != 1 && got.FlushLog.Int64 == 1 {
		if refusal == nil || !strings.Contains(refusal.Error(), "sync_binlog="+strconv.FormatInt(sync, 10)) {
			t.Fatalf("with the binary log on and sync_binlog=%d: %v, want refused for sync_binlog", sync, refusal)
		}
	}
}

// TestDurabilityRefusals: the decision on each combination of settings.
func TestDurabilityRefusals(t *testing.T) {
	t.Parallel()
	n := func(v int64) sql.NullInt64 { return sql.NullInt64{Int64: v, Valid: true} }
	for _, c := range []struct {
		name   string
		d      mysqldriver.Durability
		refuse string // a part of the refusal; "" accepts
	}{
		{"FlushedAtCommitWithoutBinlog", mysqldriver.Durability{FlushLog: n(1), SyncBinlog: n(0)}, ""},
		{"BinlogSyncedAtCommit", mysqldriver.Durability{FlushLog: n(1), LogBin: true, SyncBinlog: n(1)}, ""},
		{"BinlogLeftToTheOS", mysqldriver.Durability{FlushLog: n(1), LogBin: true, SyncBinlog: n(0)}, "sync_binlog=0"},
		{"BinlogSyncedEveryHundred", mysqldriver.Durability{FlushLog: n(1), LogBin: true, SyncBinlog: n(100)}, "sync_binlog=100"},
		{"MariaDBFlushedAtPrepareAndCommit", mysqldriver.Durability{FlushLog: n(3), LogBin: true, SyncBinlog: n(0)}, ""},
		{"NoInnoDBSettingAndBinlogLeftToTheOS", mysqldriver.Durability{LogBin: true, SyncBinlog: n(0)}, "sync_binlog=0"},
		{"FlushedEverySecond", mysqldriver.Durability{FlushLog: n(2), SyncBinlog: n(1)}, "innodb_flush_log_at_trx_commit=2"},
		{"NeverFlushedAtCommitWithASyncedBinlog", mysqldriver.Durability{FlushLog: n(0), LogBin: true, SyncBinlog: n(1)}, "innodb_flush_log_at_trx_commit=0"},
	} {
		t.Run(c.name, func(t *testing.T) {
			err := mysqldriver.DurabilityRefusal(c.d)
			switch {
			case c.refuse == "" && err != nil:
				t.Fatalf("%+v refused: %v", c.d, err)
			case c.refuse != "" && (err == nil || !strings.Contains(err.Error(), c.refuse)):
				t.Fatalf("%+v: %v, want refused for %s", c.d, err, c.refuse)
			}
		})
	}
}
