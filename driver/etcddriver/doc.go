// Package etcddriver is the fenced backend on an etcd v3 cluster: leases,
// fences and the resource store, each decided inside one etcd transaction
// (a Txn whose compares are the condition), never by a read judged in Go.
// It registers the URL scheme etcd:
//
//	etcd://host:2379,host:2379,host:2379/prefix
//
// Every key it writes is under "/prefix/" ("/fenced/" when the URL has no
// path); several deployments share a cluster under different prefixes.
//
// # Keys
//
//	/prefix/lease/NAME   the lease record: owner, fence, TTL, expiry, released (no etcd lease: it survives release and expiry)
//	/prefix/held/NAME    "FENCE/OWNER", attached to the generation's etcd lease: it exists exactly while the generation is held
//	/prefix/floor        the fence floor the last fence advance set, and when
//	/prefix/res/KEY      a resource: its fence and write time (20 digits each), then the value
//	/prefix/op/KEY\x00ID the recorded outcome of a resource write's operation id
//	/prefix/waiter/NAME\x00OWNER  a campaigner waiting for the lease NAME, attached to an etcd lease of its own: it exists while the record lasts
//
// # Expiry is the cluster's
//
// A generation is held while its held key exists. The key is attached to an
// etcd lease, so the cluster ends it: the leader's lessor finds the TTL run
// out and deletes the key through raft. No client clock decides it. Every
// deciding transaction compares the held key, so the held/free decision is
// the cluster's at the revision the transaction commits. etcd lease TTLs are
// whole seconds, at least the cluster's minimum (ceil(1.5 × election
// timeout), 2 s with etcd's defaults): a TTL that is not a whole number of
// seconds is refused with an *InvalidError, and so is one the cluster raised
// to its minimum (the grant is revoked), rather than silently rounded. A
// lease also outlives its TTL a little: the lessor checks for expired leases
// every 500 ms and the deletion is a raft write, and a new leader extends
// every lease by the election timeout. Held is true until the key is gone.
//
// # The clock
//
// etcd has no clock a client can read, so the driver does not implement
// driver.Clock (Client.DatabaseTime answers fenced.ErrClockNotSupported,
// which matches errors.ErrUnsupported). DecidedAt is this process's clock
// read just before the deciding request was sent, and ExpiresAt is
// DecidedAt + TTL: the cluster starts the TTL when it applies the grant,
// which is later, so ExpiresAt is the earliest the lease can end, the safe
// side for a holder that stops work by it.
//
// # The fence
//
// The fence is a counter in the lease record, not the cluster revision: a
// grant reads the record and writes fence+1 in a Txn that compares the
// record's and the floor's mod_revision with the ones read and that the held
// key does not exist (or, for the same owner's re-acquire, is unchanged), so
// two grants of one fence cannot both commit; the loser reads again. The
// revision would also increase, but it is shared by every key of the
// cluster, so fences would jump by unrelated writes and the fence of a name
// could not start at 1 and count takeovers as on the SQL backends.
//
// # What etcd does not keep
//
// The job queue and the semaphores are not offered: the driver implements
// neither driver.JobDriver nor driver.SemaphoreDriver, so a fenced.Client
// over it answers every job and semaphore method with
// fenced.ErrJobsNotSupported or fenced.ErrSemaphoresNotSupported (both
// match errors.ErrUnsupported) without calling it. LeaseTx gives fn a
// *Tx that buffers etcd puts and deletes and commits them in one Txn iff the
// held key still names the caller's owner and fence; SQL on it is refused.
// It does not block a takeover while fn runs (etcd has no row lock): a
// takeover during fn makes the commit stale instead.
package etcddriver
