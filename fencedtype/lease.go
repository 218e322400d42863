package fencedtype

import "time"

// Lease is one generation of a named lease as the database decided it.
//
// Name, Owner and Fence identify the generation; a holder passes the Lease
// back to renew, release and LeaseTx. Fence is strictly increasing per name
// and never reused, so a protected write can compare it. After a release
// or an expiry the row keeps its last owner and fence, so that the next
// grant continues the sequence. A fence advance ends every lease: it
// releases them and raises their fence to the new floor, which no owner
// held (Advanced).
type Lease struct {
	Name      string    `json:"name"`
	Owner     string    `json:"owner"` // the holder, or the last one once released or expired
	Fence     int64     `json:"fence"`
	ExpiresAt time.Time `json:"expires_at,omitzero"` // by the database clock
	// Held is true when the lease is unreleased and unexpired by the database
	// clock at DecidedAt.
	Held bool `json:"held"`
	// Released is true once the generation was released, by its owner or
	// by a fence advance; ExpiresAt is then when it stopped being held.
	Released bool `json:"released"`
	// Advanced is true when the last fence advance ended the lease and no
	// grant was made since: Fence is the floor the advance set, which no
	// owner held (the next grant is above it), and Owner and ExpiresAt are
	// the last holder's, whose generation had a lower fence. GetLease and
	// ListLeases report it (on backends that can read the fence floor).
	Advanced bool `json:"advanced"`
	// DecidedAt is the database clock reading of the statement that produced
	// this value.
	DecidedAt time.Time `json:"-"`
}
