package etcddriver

import (
	"context"
	"fmt"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/fenced/fenced/fencedtype"
)

// ttlSeconds is ttl as the whole seconds an etcd lease is granted for. A
// TTL that is not a whole number of seconds is refused, not rounded: a
// rounded-up lease would hold longer than its holder was told, a
// rounded-down one would end before the holder's own deadline.
func ttlSeconds(ttl time.Duration) (int64, error) {
	if ttl < time.Second || ttl%time.Second != 0 {
		return 0, fencedtype.Invalid("ttl", "%s: etcd leases last whole seconds; want 1s, 2s, …", ttl)
	}
	return int64(ttl / time.Second), nil
}

// grant grants an etcd lease of secs seconds. The cluster raises a TTL
// below its minimum (ceil(1.5 × election timeout)) without saying so but
// in the TTL it answers; such a lease is revoked and the TTL refused.
func (d *Driver) grant(ctx context.Context, secs int64) (clientv3.LeaseID, error) {
	var g *clientv3.LeaseGrantResponse
	err := retry(ctx, func() (err error) {
		g, err = d.cli.Grant(ctx, secs)
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("grant etcd lease: %w", err)
	}
	if g.TTL != secs {
		d.revoke(ctx, g.ID)
		return 0, fencedtype.Invalid("ttl", "%ds is below this etcd cluster's minimum lease TTL of %ds", secs, g.TTL)
	}
	return g.ID, nil
}

// revoke ends an etcd lease no key needs any more, and deletes the keys
// still attached to it. Its failure is harmless (the lease runs out by its
// TTL), so it is not reported; it gets a context of its own, as it is
// also called after the caller's context ended.
func (d *Driver) revoke(ctx context.Context, id clientv3.LeaseID) {
	if id == clientv3.NoLease {
		return
	}
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Second)
	defer cancel()
	_, _ = d.cli.Revoke(rctx, id)
}
