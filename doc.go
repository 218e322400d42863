// Package fenced provides leases, and writes that a stale lease holder can
// never complete.
//
// The data types (Lease, Job, Resource, Backoff, StaleError and the rest)
// are defined in package fencedtype and aliased here, so a driver can use
// them without importing this package; their fields are documented there:
// go doc ./fencedtype Lease.
//
// # The problem
//
// A worker holding a lease can pause — a GC pause, a VM freeze, a partition —
// past the lease's TTL while another worker takes over. When the first one
// wakes it still believes it owns the work and writes its stale result over
// the new owner's. A TTL decides who may start; only a fencing token decides
// who may still finish.
//
// # The model
//
// A lease is a named row (name, owner, fence, expires_at). Every grant of a
// free lease bumps its fence by one; the fence is never reset (release keeps
// the row) and never reused, so it orders the lease's generations. Expiry is
// judged by the database clock inside the deciding statement; the
// application's clock is never the authority.
//
// The invariant: once the database has granted generation N+1 of a lease, no
// write that carries generation N or older commits — to the lease row, or to
// any row the caller protects with it. The rejected caller gets a
// *StaleError saying what is current, never a silent success and never
// ErrNotFound.
//
// Protected writes come in two kinds:
//
//   - Client.LeaseTx runs the caller's own statements in a transaction that
//     first share-locks the lease row and checks owner, fence and expiry; a
//     takeover waits for the transaction, so what commits was written under a
//     generation that was still current.
//   - Client.WriteResource is a fenced key-value store: a write carrying fence
//     F is accepted iff F is at least the fence stored with the key, in one
//     statement, for resources outside the caller's tables.
//
// A Keeper renews a lease in the background and ends its context when the
// lease is lost. It is a liveness aid only: safety comes from the fence checks
// above, which hold even for a process that was paused and does not know it.
//
// # Jobs
//
// The job queue applies the same rule to every transition of a job. A claim
// starts a new attempt and bumps the job's fence; heartbeats, completion,
// failure, snooze, progress and business writes in Client.JobTx are each
// guarded by id + fence + state running + unexpired lease in their
// statement. A job's states:
//
//	queued ──claim──▶ running ──complete──▶ succeeded
//	  ▲                  ├──fail (attempts left), snooze, lease lost──▶ queued
//	  │                  ├──fail (exhausted or discarded)──▶ failed (dead letter)
//	  │                  └──cancel requested, worker stops──▶ cancelled
//	  └──retry── failed, cancelled;     queued ──cancel──▶ cancelled
//
// A Worker claims in batches, heartbeats all its jobs in one statement,
// writes outcomes in batches and cancels a handler's context when its job is
// lost or asked to cancel. A Maintainer recovers expired work, deletes old
// finished jobs and enqueues periodic jobs, each round guarded by a lease.
//
// After a database is restored from a backup or an asynchronous replica is
// promoted, run Client.AdvanceFences (the `fenced fence advance` command)
// before workers start again: the restored copy may be behind fences that
// protected resources have already seen.
//
// # Backends
//
// PostgreSQL through pgx v5 (driver/pgdriver), embedded SQLite through the
// pure-Go modernc.org/sqlite (driver/sqlitedriver), and MariaDB 10.6+ or
// MySQL 8 through go-sql-driver/mysql (driver/mysqldriver; only MariaDB
// 10.11 is tested, and its package doc lists what MySQL 8 does otherwise). Open picks one from
// a URL: postgres://…, mysql://user:pass@host:3306/db (also mariadb://),
// sqlite:///abs/path or sqlite:rel/path. etcd v3 (driver/etcddriver,
// etcd://host:2379/prefix) keeps leases, fences and resources, and offers no
// job queue or semaphores (Client.Supports). Every backend passes the same
// conformance suite (package driver/drivertest), less the groups of the
// capabilities it does not offer.
package fenced
