package etcddriver

import (
	"context"
	"errors"
	"fmt"
	"time"

	"go.etcd.io/etcd/api/v3/mvccpb"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/fenced/fenced/driver"
	"github.com/fenced/fenced/fencedtype"
)

// A campaigner's record of waiting for a lease is its waiter key, attached
// to an etcd lease of its own whose TTL is how long the record lasts: the
// cluster deletes the key when it runs out, so a key that exists is a
// record that lasts, by the cluster's judgement, not a clock's.

// waiterState is the waiter keys of one name as a read found them.
type waiterState struct {
	kvs []*mvccpb.KeyValue
	rev int64 // the read's revision
}

// own is owner's waiter key, nil when it has none.
func (w waiterState) own(k keys, name, owner string) *mvccpb.KeyValue {
	key := k.waiter(name, owner)
	for _, kv := range w.kvs {
		if string(kv.Key) == key {
			return kv
		}
	}
	return nil
}

// others reports whether another owner than owner waits.
func (w waiterState) others(k keys, name, owner string) bool {
	key := k.waiter(name, owner)
	for _, kv := range w.kvs {
		if string(kv.Key) != key {
			return true
		}
	}
	return false
}

// readCampaign is readLease, with the name's waiter keys in the same read
// when campaign is set.
func (d *Driver) readCampaign(ctx context.Context, name string, campaign bool) (*leaseState, waiterState, error) {
	if !campaign {
		s, err := d.readLease(ctx, name)
		return s, waiterState{}, err
	}
	s, resp, err := d.readLeaseWith(ctx, name, clientv3.OpGet(d.keys.waiters(name), clientv3.WithPrefix()))
	if err != nil {
		return nil, waiterState{}, err
	}
	return s, waiterState{kvs: resp.Responses[3].GetResponseRange().GetKvs(), rev: resp.Header.Revision}, nil
}

// CampaignLease implements driver.CampaignDriver: AcquireLease's read and
// Txn, the read taking in the name's waiter keys. The last holder's grant
// also compares that no waiter key of the name was written since the
// read; a refusal writes the campaigner's own key.
func (d *Driver) CampaignLease(ctx context.Context, p driver.CampaignLeaseParams) (*fencedtype.Lease, error) {
	return d.acquire(ctx, p.AcquireLeaseParams, &p)
}

// AddLeaseWaiter implements driver.CampaignDriver.
func (d *Driver) AddLeaseWaiter(ctx context.Context, w driver.LeaseWaiter) error {
	resp, err := d.get(ctx, d.keys.waiter(w.Name, w.Owner))
	if err != nil {
		return fmt.Errorf("add waiter of lease %q: %w", w.Name, err)
	}
	var old *mvccpb.KeyValue
	if len(resp.Kvs) > 0 {
		old = resp.Kvs[0]
	}
	if err := d.addWaiter(ctx, w.Name, w.Owner, w.For, old); err != nil {
		return fmt.Errorf("add waiter of lease %q: %w", w.Name, err)
	}
	return nil
}

// addWaiter writes owner's waiter key of name on a new etcd lease of wait
// (in whole seconds, rounded up; the cluster may raise it to its minimum,
// which only makes the record last longer), then revokes the etcd lease of
// the key it replaces, old (nil when there was none).
func (d *Driver) addWaiter(ctx context.Context, name, owner string, wait time.Duration, old *mvccpb.KeyValue) error {
	secs := max(int64((wait+time.Second-1)/time.Second), 1)
	for range maxAttempts {
		var g *clientv3.LeaseGrantResponse
		err := retry(ctx, func() (err error) {
			g, err = d.cli.Grant(ctx, secs)
			return err
		})
		if err != nil {
			return fmt.Errorf("grant etcd lease: %w", err)
		}
		_, err = d.writeTxn(ctx, nil, []clientv3.Op{clientv3.OpPut(d.keys.waiter(name, owner), "", clientv3.WithLease(g.ID))})
		if errors.Is(err, rpctypes.ErrLeaseNotFound) {
			continue // it ran out before the Txn, which applied nothing
		}
		if err != nil {
			return err
		}
		if old != nil && clientv3.LeaseID(old.Lease) != g.ID {
			d.revoke(ctx, clientv3.LeaseID(old.Lease))
		}
		return nil
	}
	return fmt.Errorf("the etcd leases granted ran out %d times before they were used", maxAttempts)
}

// RemoveLeaseWaiter implements driver.CampaignDriver: the key is deleted,
// then its etcd lease revoked.
func (d *Driver) RemoveLeaseWaiter(ctx context.Context, name, owner string) error {
	resp, err := d.writeTxn(ctx, nil, []clientv3.Op{clientv3.OpDelete(d.keys.waiter(name, owner), clientv3.WithPrevKV())})
	if err != nil {
		return fmt.Errorf("remove waiter of lease %q: %w", name, err)
	}
	for _, kv := range resp.Responses[0].GetResponseDeleteRange().GetPrevKvs() {
		d.revoke(ctx, clientv3.LeaseID(kv.Lease))
	}
	return nil
}
