package etcddriver

import (
	"context"
	"fmt"
	"strings"
	"time"

	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/fenced/fenced/driver"
	"github.com/fenced/fenced/fencedtype"
)

// leaseState is one name's keys as one read found them, all at one revision.
type leaseState struct {
	name     string
	rec      *leaseRecord     // nil: never acquired
	recRev   int64            // the record's mod_revision, 0 when none
	held     *mvccpb.KeyValue // the held key, nil when no generation is held
	floor    floorRecord
	floorRev int64     // the floor's mod_revision, 0 before any advance
	at       time.Time // this process's clock before the read
}

// readLease reads name's record, held key and the floor in one read-only
// Txn, so all three are of one revision.
func (d *Driver) readLease(ctx context.Context, name string) (*leaseState, error) {
	s, _, err := d.readLeaseWith(ctx, name)
	return s, err
}

// readLeaseWith is readLease with more reads in the same Txn, whose
// responses follow the lease's three in the response returned.
func (d *Driver) readLeaseWith(ctx context.Context, name string, more ...clientv3.Op) (*leaseState, *clientv3.TxnResponse, error) {
	s := &leaseState{name: name, at: time.Now()}
	resp, err := d.readTxn(ctx, append([]clientv3.Op{
		clientv3.OpGet(d.keys.record(name)), clientv3.OpGet(d.keys.held(name)), clientv3.OpGet(d.keys.floor())}, more...)...)
	if err != nil {
		return nil, nil, fmt.Errorf("read lease %q: %w", name, err)
	}
	if kv := firstKV(resp, 0); kv != nil {
		s.rec, s.recRev = new(leaseRecord), kv.ModRevision
		if err := decodeJSON(kv, s.rec); err != nil {
			return nil, nil, err
		}
	}
	s.held = firstKV(resp, 1)
	if err := s.setFloor(firstKV(resp, 2)); err != nil {
		return nil, nil, err
	}
	return s, resp, nil
}

func (s *leaseState) setFloor(kv *mvccpb.KeyValue) error {
	if kv == nil {
		return nil
	}
	s.floorRev = kv.ModRevision
	return decodeJSON(kv, &s.floor)
}

// firstKV is the first key the i-th range of a Txn found, nil when none.
func firstKV(resp *clientv3.TxnResponse, i int) *mvccpb.KeyValue {
	kvs := resp.Responses[i].GetResponseRange().GetKvs()
	if len(kvs) == 0 {
		return nil
	}
	return kvs[0]
}

// lease is the generation as stored, nil when the name was never acquired.
// A record last written before the latest fence advance was ended by it:
// its fence is the floor, released, no longer held (the advance deleted
// every held key in its Txn).
func (s *leaseState) lease() *fencedtype.Lease {
	if s.rec == nil {
		return nil
	}
	r := *s.rec
	if s.floorRev > s.recRev {
		r.Fence, r.Released = s.floor.Floor, true
		if s.floor.At.Before(r.ExpiresAt) {
			r.ExpiresAt = s.floor.At
		}
	}
	held := s.held != nil && string(s.held.Value) == holderValue(r.Owner, r.Fence)
	return &fencedtype.Lease{Name: s.name, Owner: r.Owner, Fence: r.Fence, ExpiresAt: r.ExpiresAt,
		Held: held, Released: r.Released, DecidedAt: s.at}
}

// nextFence is the fence the next grant of a new generation gets: one above
// the stored one, or above the floor for a name never acquired.
func (s *leaseState) nextFence() int64 {
	if l := s.lease(); l != nil {
		return l.Fence + 1
	}
	return s.floor.Floor + 1
}

// mine reports whether ref is the generation held now.
func (s *leaseState) mine(ref driver.LeaseRef) bool {
	l := s.lease()
	return l != nil && l.Held && l.Owner == ref.Owner && l.Fence == ref.Fence
}

// GetLease implements driver.Driver. Held is whether the held key exists
// in the read: the cluster's judgement, not a comparison of clocks.
func (d *Driver) GetLease(ctx context.Context, name string) (*fencedtype.Lease, error) {
	s, err := d.readLease(ctx, name)
	if err != nil {
		return nil, err
	}
	if l := s.lease(); l != nil {
		return l, nil
	}
	return nil, fencedtype.ErrNotFound
}

// ListLeases implements driver.Driver: records, held keys and the floor in
// one read-only Txn, ordered by name (etcd's byte order of keys).
func (d *Driver) ListLeases(ctx context.Context) ([]*fencedtype.Lease, error) {
	at := time.Now()
	resp, err := d.readTxn(ctx,
		clientv3.OpGet(d.keys.records(), clientv3.WithPrefix(), clientv3.WithSort(clientv3.SortByKey, clientv3.SortAscend)),
		clientv3.OpGet(d.keys.helds(), clientv3.WithPrefix()),
		clientv3.OpGet(d.keys.floor()),
	)
	if err != nil {
		return nil, fmt.Errorf("list leases: %w", err)
	}
	held := map[string]*mvccpb.KeyValue{}
	for _, kv := range resp.Responses[1].GetResponseRange().GetKvs() {
		held[strings.TrimPrefix(string(kv.Key), d.keys.helds())] = kv
	}
	floorKV := firstKV(resp, 2)
	var out []*fencedtype.Lease
	for _, kv := range resp.Responses[0].GetResponseRange().GetKvs() {
		name := strings.TrimPrefix(string(kv.Key), d.keys.records())
		s := &leaseState{name: name, rec: new(leaseRecord), recRev: kv.ModRevision, held: held[name], at: at}
		if err := decodeJSON(kv, s.rec); err != nil {
			return nil, err
		}
		if err := s.setFloor(floorKV); err != nil {
			return nil, err
		}
		out = append(out, s.lease())
	}
	return out, nil
}

// diagnose explains why a write on ref changed nothing, from a read after it.
func (d *Driver) diagnose(ctx context.Context, ref driver.LeaseRef) error {
	s, err := d.readLease(ctx, ref.Name)
	if err != nil {
		return err
	}
	return driver.DiagnoseLease(ref, s.lease())
}
