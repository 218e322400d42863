package fencedtype

import "time"

// Resource is a value in the fenced resource store, with the fence and
// version of the write that stored it. Its JSON form is the HTTP service's
// (internal/lib/wire), which sends Value as text.
type Resource struct {
	Key       string
	Value     []byte
	Fence     int64 // fence of the write that stored Value
	Version   int64 // 1 on the first write, +1 on every accepted write
	UpdatedAt time.Time
}

// ResourceWrite is the outcome of an accepted write.
type ResourceWrite struct {
	Key     string `json:"key"`
	Fence   int64  `json:"fence"`   // the fence the write stored
	Version int64  `json:"version"` // the version the write created
	// Replayed is true when the operation id had been seen before: this is
	// the first outcome returned again, and nothing was applied this time.
	Replayed bool `json:"replayed"`
}
