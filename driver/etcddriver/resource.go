package etcddriver

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/fenced/fenced/driver"
	"github.com/fenced/fenced/fencedtype"
)

// WriteResource implements driver.Driver.
//
// Without an operation id one Txn decides: its compare Value(key) <
// fixedFence(fence+1) holds exactly when the stored fence is at most the
// writer's (the value starts with the fence in fixed-width digits), and
// then it puts the value; else a nested Txn puts it iff the key does not
// exist, and otherwise reads the stored fence for the *StaleError. The
// version is the etcd key's own version, which counts the puts since the
// key was created (resource keys are never deleted).
//
// With an operation id, the outcome must be recorded with the write, and
// the version it created is only known from a read; so the write reads the
// resource and the id's record, and one Txn writes the value (when the
// stored fence allows) and the outcome iff the resource's mod_revision is
// the one read and the id is unrecorded. A repeat of the id returns the
// recorded outcome.
func (d *Driver) WriteResource(ctx context.Context, p driver.WriteResourceParams) (*fencedtype.ResourceWrite, error) {
	var o driver.ResourceOutcome
	var err error
	if p.OperationID == "" {
		o, err = d.writeOnce(ctx, p)
	} else {
		o, err = d.writeOp(ctx, p)
	}
	if err != nil {
		return nil, err
	}
	return o.Result(p)
}

func (d *Driver) writeOnce(ctx context.Context, p driver.WriteResourceParams) (driver.ResourceOutcome, error) {
	o := driver.ResourceOutcome{Fence: p.Fence}
	key := d.keys.resource(p.Key)
	put := clientv3.OpPut(key, encodeResource(p.Fence, p.Value, time.Now()), clientv3.WithPrevKV())
	resp, err := d.writeTxn(ctx, []clientv3.Cmp{
		clientv3.Compare(clientv3.Value(key), "<", fixedFence(uint64(p.Fence)+1)),
	}, []clientv3.Op{put},
		clientv3.OpTxn([]clientv3.Cmp{clientv3.Compare(clientv3.CreateRevision(key), "=", 0)},
			[]clientv3.Op{put}, []clientv3.Op{clientv3.OpGet(key)}),
	)
	if err != nil {
		return o, fmt.Errorf("write resource %q: %w", p.Key, err)
	}
	if resp.Succeeded {
		o.Accepted, o.Version = true, nextVersion(resp.Responses[0].GetResponsePut().GetPrevKv())
		return o, nil
	}
	inner := resp.Responses[0].GetResponseTxn()
	if inner.GetSucceeded() {
		o.Accepted, o.Version = true, 1
		return o, nil
	}
	kvs := inner.GetResponses()[0].GetResponseRange().GetKvs()
	if len(kvs) == 0 {
		return o, fmt.Errorf("write resource %q: refused, but the key is gone", p.Key)
	}
	o.Current, _, err = decodeResource(kvs[0])
	return o, err
}

// nextVersion is the version a put created, given the key before it.
func nextVersion(prev *mvccpb.KeyValue) int64 {
	if prev == nil {
		return 1
	}
	return prev.Version + 1
}

// opRecord is a resource write's recorded outcome.
type opRecord struct {
	Fence    int64  `json:"fence"`
	Accepted bool   `json:"accepted"`
	Version  int64  `json:"version"`
	Current  int64  `json:"current_fence"`
	Digest   []byte `json:"digest"`
}

func (d *Driver) writeOp(ctx context.Context, p driver.WriteResourceParams) (driver.ResourceOutcome, error) {
	key, opKey := d.keys.resource(p.Key), d.keys.op(p.Key, p.OperationID)
	for range maxAttempts {
		resp, err := d.readTxn(ctx, clientv3.OpGet(key), clientv3.OpGet(opKey))
		if err != nil {
			return driver.ResourceOutcome{}, fmt.Errorf("write resource %q op %q: %w", p.Key, p.OperationID, err)
		}
		if kv := firstKV(resp, 1); kv != nil {
			var r opRecord
			if err := json.Unmarshal(kv.Value, &r); err != nil {
				return driver.ResourceOutcome{}, fmt.Errorf("etcd key %q holds no operation record: %w", kv.Key, err)
			}
			o := driver.ResourceOutcome{Replayed: true, Fence: r.Fence, Accepted: r.Accepted, Version: r.Version, Current: r.Current}
			return o, driver.CheckReplay(p, r.Digest)
		}
		o := driver.ResourceOutcome{Fence: p.Fence, Accepted: true, Version: 1}
		var rev int64
		if kv := firstKV(resp, 0); kv != nil {
			stored, _, err := decodeResource(kv)
			if err != nil {
				return o, err
			}
			rev, o.Version = kv.ModRevision, kv.Version+1
			if stored > p.Fence {
				o.Accepted, o.Version, o.Current = false, 0, stored
			}
		}
		ops := []clientv3.Op{clientv3.OpPut(opKey, mustJSON(opRecord{o.Fence, o.Accepted, o.Version, o.Current, driver.ResourceDigest(p)}))}
		if o.Accepted {
			ops = append(ops, clientv3.OpPut(key, encodeResource(p.Fence, p.Value, time.Now())))
		}
		w, err := d.writeTxn(ctx, []clientv3.Cmp{
			clientv3.Compare(clientv3.ModRevision(key), "=", rev),
			clientv3.Compare(clientv3.CreateRevision(opKey), "=", 0),
		}, ops)
		if err != nil {
			return o, fmt.Errorf("write resource %q op %q: %w", p.Key, p.OperationID, err)
		}
		if w.Succeeded {
			return o, nil
		}
	}
	return driver.ResourceOutcome{}, fmt.Errorf("write resource %q op %q: refused %d times while the resource kept changing", p.Key, p.OperationID, maxAttempts)
}

// ReadResource implements driver.Driver.
func (d *Driver) ReadResource(ctx context.Context, key string) (*fencedtype.Resource, error) {
	resp, err := d.get(ctx, d.keys.resource(key))
	if err != nil {
		return nil, fmt.Errorf("get resource %q: %w", key, err)
	}
	if len(resp.Kvs) == 0 {
		return nil, fencedtype.ErrNotFound
	}
	kv := resp.Kvs[0]
	fence, body, err := decodeResource(kv)
	if err != nil {
		return nil, err
	}
	return &fencedtype.Resource{Key: key, Value: body.Value, Fence: fence, Version: kv.Version, UpdatedAt: body.UpdatedAt}, nil
}
