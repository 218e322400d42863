package etcddriver

import (
	"context"
	"fmt"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/fenced/fenced/driver"
)

// AdvanceFences implements driver.Driver. It reads every lease record and
// the floor at one revision R, then one Txn raises the floor to the highest
// fence stored plus by and deletes every held key, iff the floor is
// unchanged and no record was written after R (a compare over the whole
// record range). Records are not rewritten: one written before the floor
// reads as ended by it (fence = floor, released; see leaseState.lease), so
// the Txn has a fixed number of operations however many leases there are.
// A grant that races it compares the floor's revision and reads again.
//
// After restoring a snapshot (etcdutl snapshot restore), the cluster has
// forgotten the fences granted after it; an advance by more than the grants
// made since puts every new fence above them. etcdutl's --bump-revision
// (with --mark-compacted) does the same for revisions, which watchers and
// mod_revision compares see, but not for these fences, which are counters
// in values: run fenced fence advance as well.
func (d *Driver) AdvanceFences(ctx context.Context, by int64) (int64, error) {
	for range maxAttempts {
		at := time.Now()
		resp, err := d.readTxn(ctx,
			clientv3.OpGet(d.keys.records(), clientv3.WithPrefix()),
			clientv3.OpGet(d.keys.floor()),
			clientv3.OpGet(d.keys.helds(), clientv3.WithPrefix()),
		)
		if err != nil {
			return 0, fmt.Errorf("advance fences: %w", err)
		}
		s := &leaseState{}
		if err := s.setFloor(firstKV(resp, 1)); err != nil {
			return 0, err
		}
		top := s.floor.Floor
		for _, kv := range resp.Responses[0].GetResponseRange().GetKvs() {
			var rec leaseRecord
			if err := decodeJSON(kv, &rec); err != nil {
				return 0, err
			}
			if kv.ModRevision > s.floorRev && rec.Fence > top {
				top = rec.Fence
			}
		}
		floor := floorRecord{Floor: top + by, At: at}
		rev := resp.Header.Revision
		ok, err := d.writeTxn(ctx, []clientv3.Cmp{
			clientv3.Compare(clientv3.ModRevision(d.keys.floor()), "=", s.floorRev),
			clientv3.Compare(clientv3.ModRevision(d.keys.records()), "<", rev+1).WithPrefix(),
		}, []clientv3.Op{
			clientv3.OpPut(d.keys.floor(), mustJSON(floor)),
			clientv3.OpDelete(d.keys.helds(), clientv3.WithPrefix()),
		})
		if err != nil {
			return 0, fmt.Errorf("advance fences: %w", err)
		}
		if !ok.Succeeded {
			continue
		}
		for _, kv := range resp.Responses[2].GetResponseRange().GetKvs() {
			d.revoke(ctx, clientv3.LeaseID(kv.Lease)) // their keys are gone
		}
		return floor.Floor, nil
	}
	return 0, fmt.Errorf("advance fences: refused %d times while leases kept changing", maxAttempts)
}

var _ driver.FenceFloorReader = (*Driver)(nil)

// FenceFloor implements driver.FenceFloorReader.
func (d *Driver) FenceFloor(ctx context.Context) (int64, error) {
	resp, err := d.get(ctx, d.keys.floor())
	if err != nil {
		return 0, fmt.Errorf("read fence floor: %w", err)
	}
	var f floorRecord
	if len(resp.Kvs) > 0 {
		if err := decodeJSON(resp.Kvs[0], &f); err != nil {
			return 0, err
		}
	}
	return f.Floor, nil
}
