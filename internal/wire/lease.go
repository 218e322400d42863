package wire

import (
	"time"

	"github.com/fenced/fenced"
)

// Lease is a lease: its current (or last) owner and fence, its expiry by
// the database clock, and whether it was held, by the database clock, when
// it was read. ExpiresAt is left out when unknown (a release reports none).
type Lease struct {
	Name      string    `json:"name"`
	Owner     string    `json:"owner"`
	Fence     int64     `json:"fence"`
	ExpiresAt time.Time `json:"expires_at,omitzero"`
	Held      bool      `json:"held"`
}

// LeaseFrom is the wire form of l.
func LeaseFrom(l *fenced.Lease) Lease {
	return Lease{Name: l.Name, Owner: l.Owner, Fence: l.Fence, ExpiresAt: l.ExpiresAt.UTC(), Held: l.Held}
}

// LeasesFrom is the wire form of ls; never nil, so it encodes as [].
func LeasesFrom(ls []*fenced.Lease) []Lease {
	out := make([]Lease, len(ls))
	for i, l := range ls {
		out[i] = LeaseFrom(l)
	}
	return out
}
