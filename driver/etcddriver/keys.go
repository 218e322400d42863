package etcddriver

import (
	"encoding/json"
	"fmt"
	"strconv"
	"time"

	"go.etcd.io/etcd/api/v3/mvccpb"
)

// keys lays out the driver's keys under its prefix (see the package doc).
type keys struct{ prefix string }

func (k keys) records() string            { return k.prefix + "lease/" }
func (k keys) record(name string) string  { return k.records() + name }
func (k keys) helds() string              { return k.prefix + "held/" }
func (k keys) held(name string) string    { return k.helds() + name }
func (k keys) floor() string              { return k.prefix + "floor" }
func (k keys) resource(key string) string { return k.prefix + "res/" + key }

// waiters is the prefix of the keys of the campaigners waiting for the
// lease name; waiter is one's. Names and owners hold no control
// characters (the root package validates them), so NUL ends the name.
func (k keys) waiters(name string) string       { return k.prefix + "waiter/" + name + "\x00" }
func (k keys) waiter(name, owner string) string { return k.waiters(name) + owner }

// op is a resource write's operation-id record. Keys and ids hold no
// control characters (the root package validates them), so NUL separates
// them unambiguously.
func (k keys) op(key, id string) string { return k.prefix + "op/" + key + "\x00" + id }

// leaseRecord is the stored generation of a lease. It has no etcd lease,
// so the fence survives release and expiry.
type leaseRecord struct {
	Owner     string    `json:"owner"`
	Fence     int64     `json:"fence"`
	TTL       int64     `json:"ttl_s"`      // the etcd lease's TTL in seconds
	ExpiresAt time.Time `json:"expires_at"` // the earliest the cluster can end it (package doc)
	Released  bool      `json:"released"`
}

// floorRecord is what the last fence advance set.
type floorRecord struct {
	Floor int64     `json:"floor"`
	At    time.Time `json:"at"` // this process's clock when it advanced
}

// holderValue is the held key's value for a generation: comparing it names
// owner and fence in one compare.
func holderValue(owner string, fence int64) string {
	return strconv.FormatInt(fence, 10) + "/" + owner
}

func decodeJSON(kv *mvccpb.KeyValue, v any) error {
	if err := json.Unmarshal(kv.Value, v); err != nil {
		return fmt.Errorf("etcd key %q holds no fenced record: %w", kv.Key, err)
	}
	return nil
}

func mustJSON(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err) // plain structs of strings, numbers and times
	}
	return string(b)
}

// fenceDigits is the width of a fence written as a fixed-width decimal, so
// that etcd's byte-wise value compare orders fences as numbers.
const fenceDigits = 20

func fixedFence(f uint64) string { return fmt.Sprintf("%0*d", fenceDigits, f) }

// resourceBody is a resource's value after its fence digits.
type resourceBody struct {
	Value     []byte
	UpdatedAt time.Time
}

// encodeResource is a resource key's value: the fence in fixed-width digits
// (a compare Value(key) < fixedFence(f+1) is then true exactly when the
// stored fence is at most f), the write time in Unix nanoseconds in as many
// digits, then the value's bytes as they are (a 1 MiB value fits etcd's
// default 1.5 MiB request limit).
func encodeResource(fence int64, value []byte, at time.Time) string {
	return fixedFence(uint64(fence)) + fixedFence(uint64(at.UnixNano())) + string(value)
}

func decodeResource(kv *mvccpb.KeyValue) (int64, resourceBody, error) {
	var b resourceBody
	s := string(kv.Value)
	if len(s) < 2*fenceDigits {
		return 0, b, fmt.Errorf("etcd key %q holds no fenced resource", kv.Key)
	}
	f, err := strconv.ParseUint(s[:fenceDigits], 10, 63)
	if err != nil {
		return 0, b, fmt.Errorf("etcd key %q holds no fenced resource: %w", kv.Key, err)
	}
	ns, err := strconv.ParseUint(s[fenceDigits:2*fenceDigits], 10, 63)
	if err != nil {
		return 0, b, fmt.Errorf("etcd key %q holds no fenced resource: %w", kv.Key, err)
	}
	b.Value, b.UpdatedAt = []byte(s[2*fenceDigits:]), time.Unix(0, int64(ns))
	return int64(f), b, nil
}
