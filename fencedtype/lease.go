package fencedtype

import "time"

// Lease is one generation of a named lease as the database decided it.
//
// Name, Owner and Fence identify the generation; a holder passes the Lease
// back to renew, release and LeaseTx. Fence is strictly increasing per name
// and never reused, so a protected write can compare it. After a release
// or an expiry the row keeps its last owner and fence, so that the next
// grant continues the sequence.
type Lease struct {
	Name      string    `json:"name"`
	Owner     string    `json:"owner"` // the holder, or the last one once released or expired
	Fence     int64     `json:"fence"`
	ExpiresAt time.Time `json:"expires_at,omitzero"` // by the database clock
	// Held is true when the lease is unreleased and unexpired by the database
	// clock at DecidedAt.
	Held     bool `json:"held"`
	Released bool `json:"released"`
	// DecidedAt is the database clock reading of the statement that produced
	// this value.
	DecidedAt time.Time `json:"-"`
}
