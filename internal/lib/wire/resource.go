package wire

import "github.com/fenced/fenced"

// Resource is a value of the fenced resource store with the fence and
// version of the write that stored it.
//
// Value is UTF-8 text: the HTTP service refuses to store anything else. A
// value stored through the library is bytes; the command prints it as a
// string as it is, and the HTTP service, which cannot put invalid UTF-8 in
// a JSON string without changing it, sends such a value in ValueBase64
// (standard encoding) with Value empty.
type Resource struct {
	Key         string `json:"key"`
	Value       string `json:"value"`
	ValueBase64 string `json:"value_base64,omitempty"`
	Fence       int64  `json:"fence"`
	Version     int64  `json:"version"`
	UpdatedAt   Time   `json:"updated_at"`
}

// ResourceFrom is the wire form of r, with the value as a string as it is.
func ResourceFrom(r *fenced.Resource) Resource {
	return Resource{Key: r.Key, Value: string(r.Value), Fence: r.Fence, Version: r.Version, UpdatedAt: Time(r.UpdatedAt)}
}
