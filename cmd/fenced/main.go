// Command fenced is the command-line tool of fenced: take, renew, release and
// inspect fenced leases, run a command under a lease (like flock(1), but
// with a fence the command can pass to its writes), write to the fenced
// resource store, enqueue, inspect, cancel and retry jobs, work jobs with a
// command per attempt ("job work"), advance fences after a restore or
// failover, and migrate the database.
//
// The database is chosen by --db or FENCED_DATABASE_URL, and is an embedded
// SQLite file, fenced.db in the working directory, when neither is set. A
// command that writes migrates it first (creating the SQLite file); one
// that only reads (ls, show, counts, slots) never does, and refuses a
// database not migrated, saying to run "fenced migrate".
//
// Exit codes: 0 success; 1 other error; 2 usage or invalid input; 3 lease
// held by another owner; 4 stale fence; 5 not found. "fenced lease run"
// exits with its command's status.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"
	_ "time/tzdata" // the zones of --periodic cron expressions, on a machine without them
)

func main() {
	// The first SIGINT or SIGTERM cancels the command's context; "lease run"
	// forwards them to its child instead, and "job work" stops gracefully.
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], newApp())
	stop()
	os.Exit(code)
}
