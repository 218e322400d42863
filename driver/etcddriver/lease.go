package etcddriver

import (
	"context"
	"errors"
	"fmt"
	"time"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/fenced/fenced/driver"
	"github.com/fenced/fenced/fencedtype"
)

// maxAttempts bounds the optimistic retries of a write whose Txn lost to a
// concurrent one. Each retry means another client changed the keys, so it
// ends unless they churn without pause; then a plain error.
const maxAttempts = 200

// AcquireLease implements driver.Driver. One Txn decides: it writes the held
// key (attached to a new etcd lease) and the record iff the held key does
// not exist (the name is free: never held, released, expired or advanced)
// or, for the same owner's re-acquire, is the very key read (same
// generation, still held: it keeps its fence and moves to the new etcd
// lease), and iff the record and the floor are still those the fence was
// computed from. Another owner's held key is a *HeldError.
func (d *Driver) AcquireLease(ctx context.Context, p driver.AcquireLeaseParams) (*fencedtype.Lease, error) {
	return d.acquire(ctx, p, nil)
}

// acquire is AcquireLease, and CampaignLease when c is not nil.
func (d *Driver) acquire(ctx context.Context, p driver.AcquireLeaseParams, c *driver.CampaignLeaseParams) (*fencedtype.Lease, error) {
	secs, err := ttlSeconds(p.TTL)
	if err != nil {
		return nil, err
	}
	var id clientv3.LeaseID // granted once, reused by retries, revoked when unused
	used := false
	defer func() {
		if !used {
			d.revoke(ctx, id)
		}
	}()
	var at time.Time
	for range maxAttempts {
		s, w, err := d.readCampaign(ctx, p.Name, c != nil)
		if err != nil {
			return nil, err
		}
		cur := s.lease()
		extend := cur != nil && cur.Held && cur.Owner == p.Owner
		if cur != nil && cur.Held && !extend {
			if c != nil {
				if err := d.addWaiter(ctx, p.Name, p.Owner, c.Wait, w.own(d.keys, p.Name, p.Owner)); err != nil {
					return nil, fmt.Errorf("campaign for lease %q: %w", p.Name, err)
				}
			}
			return nil, driver.HeldBy(cur)
		}
		// A campaigner that last held the lease yields it to the others
		// waiting, and takes it only if no other one started waiting since
		// the read (a waiter's key written after it).
		yields := c != nil && cur != nil && !cur.Held && cur.Owner == p.Owner
		if yields && w.others(d.keys, p.Name, p.Owner) {
			if err := d.addWaiter(ctx, p.Name, p.Owner, c.Wait, w.own(d.keys, p.Name, p.Owner)); err != nil {
				return nil, fmt.Errorf("campaign for lease %q: %w", p.Name, err)
			}
			return nil, driver.ErrWaitersFirst
		}
		fence := s.nextFence()
		cmps := []clientv3.Cmp{
			clientv3.Compare(clientv3.ModRevision(d.keys.record(p.Name)), "=", s.recRev),
			clientv3.Compare(clientv3.ModRevision(d.keys.floor()), "=", s.floorRev),
		}
		if yields {
			cmps = append(cmps, clientv3.Compare(clientv3.ModRevision(d.keys.waiters(p.Name)), "<", w.rev+1).WithPrefix())
		}
		if extend {
			fence = cur.Fence
			cmps = append(cmps, clientv3.Compare(clientv3.ModRevision(d.keys.held(p.Name)), "=", s.held.ModRevision))
		} else {
			cmps = append(cmps, clientv3.Compare(clientv3.CreateRevision(d.keys.held(p.Name)), "=", 0))
		}
		// The decision time is read after the read the fence came from and
		// before the etcd lease's TTL (re)starts: so fences are granted in
		// the order of their decision times, and the cluster ends the lease
		// no earlier than at + TTL. A retry renews the lease it granted.
		// If the lease ran out while retrying, a new one is granted.
		at = time.Now()
		if id != clientv3.NoLease {
			if err := d.keepAliveOnce(ctx, id); errors.Is(err, rpctypes.ErrLeaseNotFound) {
				id = clientv3.NoLease
			} else if err != nil {
				return nil, fmt.Errorf("acquire lease %q: %w", p.Name, err)
			}
		}
		if id == clientv3.NoLease {
			if id, err = d.grant(ctx, secs); err != nil {
				return nil, fmt.Errorf("acquire lease %q: %w", p.Name, err)
			}
		}
		rec := leaseRecord{Owner: p.Owner, Fence: fence, TTL: secs, ExpiresAt: at.Add(p.TTL)}
		ops := []clientv3.Op{
			clientv3.OpPut(d.keys.held(p.Name), holderValue(p.Owner, fence), clientv3.WithLease(id)),
			clientv3.OpPut(d.keys.record(p.Name), mustJSON(rec)),
		}
		if c != nil {
			ops = append(ops, clientv3.OpDelete(d.keys.waiter(p.Name, p.Owner)))
		}
		resp, err := d.writeTxn(ctx, cmps, ops)
		if errors.Is(err, rpctypes.ErrLeaseNotFound) {
			id = clientv3.NoLease // it ran out before the Txn: nothing was applied
			continue
		}
		if err != nil {
			used = true // it may have committed: leave the lease to its TTL
			return nil, fmt.Errorf("acquire lease %q: %w", p.Name, err)
		}
		if !resp.Succeeded {
			continue
		}
		used = true
		if extend {
			d.revoke(ctx, clientv3.LeaseID(s.held.Lease)) // no key is attached to it any more
		}
		if own := w.own(d.keys, p.Name, p.Owner); own != nil {
			d.revoke(ctx, clientv3.LeaseID(own.Lease)) // its waiter key is deleted
		}
		return &fencedtype.Lease{Name: p.Name, Owner: p.Owner, Fence: fence, ExpiresAt: rec.ExpiresAt, Held: true, DecidedAt: at}, nil
	}
	return nil, fmt.Errorf("acquire lease %q: refused %d times while the lease kept changing", p.Name, maxAttempts)
}

// RenewLease implements driver.Driver. With the TTL the generation was
// granted with, the cluster's lessor renews the etcd lease (KeepAliveOnce,
// refused once the lease ran out), then a Txn checks that the held key is
// still the caller's generation on that etcd lease and stores the new
// expiry. With another TTL, one Txn moves the held key, unchanged since the
// read, to a new etcd lease. Anything else is diagnosed from a read.
func (d *Driver) RenewLease(ctx context.Context, ref driver.LeaseRef, ttl time.Duration) (*fencedtype.Lease, error) {
	secs, err := ttlSeconds(ttl)
	if err != nil {
		return nil, err
	}
	for range maxAttempts {
		s, err := d.readLease(ctx, ref.Name)
		if err != nil {
			return nil, err
		}
		if !s.mine(ref) {
			return nil, driver.DiagnoseLease(ref, s.lease())
		}
		var l *fencedtype.Lease
		if s.rec.TTL == secs {
			l, err = d.keepAlive(ctx, ref, s, ttl)
		} else {
			l, err = d.moveLease(ctx, ref, s, ttl, secs)
		}
		if l != nil || err != nil {
			return l, err
		}
	}
	return nil, fmt.Errorf("renew lease %q: refused %d times while the lease kept changing", ref.Name, maxAttempts)
}

// keepAlive renews the generation's own etcd lease. It returns nil, nil
// when the generation is still the caller's but moved to another etcd
// lease meanwhile (a concurrent renew with another TTL): try again.
func (d *Driver) keepAlive(ctx context.Context, ref driver.LeaseRef, s *leaseState, ttl time.Duration) (*fencedtype.Lease, error) {
	id := clientv3.LeaseID(s.held.Lease)
	at := time.Now()
	if err := d.keepAliveOnce(ctx, id); err != nil {
		if !errors.Is(err, rpctypes.ErrLeaseNotFound) {
			return nil, fmt.Errorf("renew lease %q: %w", ref.Name, err)
		}
		return d.refused(ctx, ref)
	}
	rec := *s.rec
	rec.ExpiresAt = at.Add(ttl)
	hk := d.keys.held(ref.Name)
	resp, err := d.writeTxn(ctx, []clientv3.Cmp{
		clientv3.Compare(clientv3.Value(hk), "=", holderValue(ref.Owner, ref.Fence)),
		clientv3.Compare(clientv3.LeaseValue(hk), "=", id),
	}, []clientv3.Op{clientv3.OpPut(d.keys.record(ref.Name), mustJSON(rec))})
	if err != nil {
		return nil, fmt.Errorf("renew lease %q: %w", ref.Name, err)
	}
	if !resp.Succeeded {
		return d.refused(ctx, ref)
	}
	return &fencedtype.Lease{Name: ref.Name, Owner: ref.Owner, Fence: ref.Fence, ExpiresAt: rec.ExpiresAt, Held: true, DecidedAt: at}, nil
}

// moveLease renews onto a new etcd lease of another TTL.
func (d *Driver) moveLease(ctx context.Context, ref driver.LeaseRef, s *leaseState, ttl time.Duration, secs int64) (*fencedtype.Lease, error) {
	at := time.Now()
	id, err := d.grant(ctx, secs)
	if err != nil {
		return nil, fmt.Errorf("renew lease %q: %w", ref.Name, err)
	}
	rec := *s.rec
	rec.TTL, rec.ExpiresAt = secs, at.Add(ttl)
	resp, err := d.writeTxn(ctx, []clientv3.Cmp{
		clientv3.Compare(clientv3.ModRevision(d.keys.held(ref.Name)), "=", s.held.ModRevision),
	}, []clientv3.Op{
		clientv3.OpPut(d.keys.held(ref.Name), holderValue(ref.Owner, ref.Fence), clientv3.WithLease(id)),
		clientv3.OpPut(d.keys.record(ref.Name), mustJSON(rec)),
	})
	if errors.Is(err, rpctypes.ErrLeaseNotFound) {
		return nil, nil // the new etcd lease ran out before the Txn, which applied nothing: try again
	}
	if err != nil {
		return nil, fmt.Errorf("renew lease %q: %w", ref.Name, err)
	}
	if !resp.Succeeded {
		d.revoke(ctx, id)
		return d.refused(ctx, ref)
	}
	d.revoke(ctx, clientv3.LeaseID(s.held.Lease))
	return &fencedtype.Lease{Name: ref.Name, Owner: ref.Owner, Fence: ref.Fence, ExpiresAt: rec.ExpiresAt, Held: true, DecidedAt: at}, nil
}

// refused diagnoses a renew that changed nothing; nil, nil when ref is
// still the held generation (it moved to another etcd lease: try again).
func (d *Driver) refused(ctx context.Context, ref driver.LeaseRef) (*fencedtype.Lease, error) {
	s, err := d.readLease(ctx, ref.Name)
	if err != nil {
		return nil, err
	}
	if s.mine(ref) {
		return nil, nil
	}
	return nil, driver.DiagnoseLease(ref, s.lease())
}

// ReleaseLease implements driver.Driver. One Txn marks the record released
// and deletes the held key iff both are as read: the caller's generation
// (held, or expired and not yet superseded). An already released
// generation is success; anything else is diagnosed from the read.
func (d *Driver) ReleaseLease(ctx context.Context, ref driver.LeaseRef) (*fencedtype.Lease, error) {
	for range maxAttempts {
		s, err := d.readLease(ctx, ref.Name)
		if err != nil {
			return nil, err
		}
		cur := s.lease()
		if cur == nil || cur.Owner != ref.Owner || cur.Fence != ref.Fence {
			return nil, driver.DiagnoseLease(ref, cur)
		}
		if cur.Released {
			return cur, nil
		}
		now := time.Now()
		rec := *s.rec
		rec.Released = true
		if now.Before(rec.ExpiresAt) {
			rec.ExpiresAt = now
		}
		hk := d.keys.held(ref.Name)
		cmps := []clientv3.Cmp{
			clientv3.Compare(clientv3.ModRevision(d.keys.record(ref.Name)), "=", s.recRev),
			clientv3.Compare(clientv3.ModRevision(d.keys.floor()), "=", s.floorRev),
		}
		ops := []clientv3.Op{clientv3.OpPut(d.keys.record(ref.Name), mustJSON(rec))}
		if s.held != nil {
			cmps = append(cmps, clientv3.Compare(clientv3.ModRevision(hk), "=", s.held.ModRevision))
			ops = append(ops, clientv3.OpDelete(hk))
		} else {
			cmps = append(cmps, clientv3.Compare(clientv3.CreateRevision(hk), "=", 0))
		}
		resp, err := d.writeTxn(ctx, cmps, ops)
		if err != nil {
			return nil, fmt.Errorf("release lease %q: %w", ref.Name, err)
		}
		if !resp.Succeeded {
			continue
		}
		if s.held != nil {
			d.revoke(ctx, clientv3.LeaseID(s.held.Lease))
		}
		return &fencedtype.Lease{Name: ref.Name, Owner: ref.Owner, Fence: ref.Fence, ExpiresAt: rec.ExpiresAt,
			Released: true, DecidedAt: now}, nil
	}
	return nil, fmt.Errorf("release lease %q: refused %d times while the lease kept changing", ref.Name, maxAttempts)
}
