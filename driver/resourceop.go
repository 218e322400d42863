package driver

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"

	"github.com/fenced/fenced/fencedtype"
)

// ResourceDigest is what a resource write's operation id is recorded with:
// a SHA-256 of the write's fence and value. A repeat of the id must carry
// the same fence and value.
func ResourceDigest(p WriteResourceParams) []byte {
	h := sha256.New()
	var f [8]byte
	binary.BigEndian.PutUint64(f[:], uint64(p.Fence))
	h.Write(f[:])
	h.Write(p.Value)
	return h.Sum(nil)
}

// CheckReplay refuses a repeat of an operation id whose fence or value
// differ from its first use, whose digest is stored (nil: an id recorded
// before digests were kept, not checked). It is an invalid-input error: the
// caller reused an id for another operation, and returning the first
// outcome would hide that.
func CheckReplay(p WriteResourceParams, stored []byte) error {
	if stored == nil || bytes.Equal(stored, ResourceDigest(p)) {
		return nil
	}
	return fencedtype.Invalid("operation id", "%q was first used on resource %q with another fence or value", p.OperationID, p.Key)
}

// ReplayedOutcome is the outcome recorded for p's operation id, scanned
// from row (fence, accepted, version, current_fence, digest: each backend's
// resourceOpGetSQL), returned again for a repeat of the id; an
// *InvalidError when the repeat's fence or value differ (CheckReplay).
func ReplayedOutcome(row Row, p WriteResourceParams) (ResourceOutcome, error) {
	o := ResourceOutcome{Replayed: true}
	var digest []byte
	if err := row.Scan(&o.Fence, &o.Accepted, &o.Version, &o.Current, &digest); err != nil {
		return o, err
	}
	return o, CheckReplay(p, digest)
}

// ResourceOutcome is what a resource write decided, as a driver records it
// for replay under an operation id.
type ResourceOutcome struct {
	Accepted bool
	Replayed bool  // the outcome of an earlier write with the same operation id
	Fence    int64 // the writer's fence
	Version  int64 // the version created, when accepted
	Current  int64 // the stored fence that refused it, otherwise
}

// Result is the outcome as ResourceWrite returns it: the write, or a
// *fencedtype.StaleError naming the stored fence.
func (o ResourceOutcome) Result(p WriteResourceParams) (*fencedtype.ResourceWrite, error) {
	if !o.Accepted {
		return nil, &fencedtype.StaleError{Kind: fencedtype.StaleResource, Name: p.Key, Fence: o.Fence,
			CurrentFence: o.Current, Reason: fencedtype.ReasonSuperseded}
	}
	return &fencedtype.ResourceWrite{Key: p.Key, Fence: o.Fence, Version: o.Version, Replayed: o.Replayed}, nil
}
