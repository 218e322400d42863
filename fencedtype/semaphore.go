package fencedtype

import "time"

// Slot is one grant of a slot of a named semaphore, as the database decided
// it: the semaphore counterpart of a Lease (docs/design.md §4.7).
//
// Name, Owner and Fence identify the grant; a holder passes the Slot back to
// renew, release and SlotTx. A semaphore's fences come from one counter per
// name, so they are strictly increasing across every grant of every slot of
// the name, and never reused: a resource written under several slots of one
// semaphore is ordered by them. Semaphore fences are a namespace of their
// own, apart from lease fences (a lease and a semaphore of the same name
// count separately). Slot is the slot's number, 0 to N−1; the grant is
// identified without it, since its fence is unique within the name.
type Slot struct {
	Name      string    `json:"name"`
	Slot      int       `json:"slot"`
	Owner     string    `json:"owner"` // the holder, or the last one once released or expired
	Fence     int64     `json:"fence"`
	ExpiresAt time.Time `json:"expires_at,omitzero"` // by the database clock
	// Held is true when the grant is unreleased and unexpired by the
	// database clock at DecidedAt.
	Held bool `json:"held"`
	// Released is true once the grant was released, by its owner or by a
	// fence advance; ExpiresAt is then when it stopped being held.
	Released bool `json:"released"`
	// DecidedAt is the database clock reading of the statement that produced
	// this value.
	DecidedAt time.Time `json:"-"`
}

// Semaphore is a named semaphore as one read found it.
type Semaphore struct {
	Name string `json:"name"`
	// Slots is N, the number of slots, as the last acquire set it.
	Slots int `json:"slots"`
	// Fence is the last fence granted under the name (or, before the first
	// grant or after a fence advance, the floor the next one starts above).
	Fence int64 `json:"fence"`
	// Holders are the grants held at DecidedAt, by slot number. A slot at
	// or above Slots was granted before an acquire made N smaller.
	Holders []Slot `json:"holders"`
	// DecidedAt is the database clock reading of the read.
	DecidedAt time.Time `json:"-"`
}

// MarshalJSON encodes the grant by its field tags, with its time in
// TimeLayout, as a Lease's.
func (s Slot) MarshalJSON() ([]byte, error) {
	type fields Slot // the same fields, without this method
	return marshal(struct {
		fields
		ExpiresAt jsonTime `json:"expires_at,omitzero"`
	}{fields(s), jsonTime(s.ExpiresAt)})
}
