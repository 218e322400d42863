package wire

import (
	"bytes"
	"encoding/json"
	"fmt"
	"time"

	"github.com/fenced/fenced/fencedtype"
)

// Time is a time that encodes in fencedtype.TimeLayout (RFC 3339, UTC,
// microseconds), as the values' own times do: the shapes of this package
// and the HTTP service's replies use it for the times they add (db_time,
// updated_at, a heartbeat's lease_expires_at).
type Time time.Time

// MarshalJSON writes t in fencedtype.TimeLayout.
func (t Time) MarshalJSON() ([]byte, error) {
	return []byte(`"` + fencedtype.FormatTime(time.Time(t)) + `"`), nil
}

// IsZero makes omitzero leave out a zero time.
func (t Time) IsZero() bool { return time.Time(t).IsZero() }

// Merge encodes v, whose JSON form is an object, followed by the members of
// extra's object: the JSON of a value with fields added. A struct that
// embeds a value with a MarshalJSON method (fencedtype.Job, Lease) gets
// that method, which knows nothing of the struct's own fields; its
// MarshalJSON calls Merge instead. <, > and & are not escaped (the calling
// encoder escapes them if asked to).
func Merge(v, extra any) ([]byte, error) {
	a, err := marshal(v)
	if err != nil {
		return nil, err
	}
	b, err := marshal(extra)
	if err != nil {
		return nil, err
	}
	if len(a) < 2 || a[0] != '{' || len(b) < 2 || b[0] != '{' {
		return nil, fmt.Errorf("wire: merge %T and %T: both must encode as JSON objects", v, extra)
	}
	switch {
	case len(b) == 2: // {}
		return a, nil
	case len(a) == 2:
		return b, nil
	}
	out := make([]byte, 0, len(a)+len(b))
	out = append(out, a[:len(a)-1]...)
	out = append(out, ',')
	return append(out, b[1:]...), nil
}

// marshal encodes v without a trailing newline or HTML escaping.
func marshal(v any) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n")), nil
}
