package driver

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/fenced/fenced/fencedtype"
)

// jobPolicy is the stored form of a job's own policies (the policy column
// of every SQL backend): a JSON object whose absent keys are unset. A job
// with none stores NULL, so it costs nothing.
type jobPolicy struct {
	TimeoutUS int64          `json:"timeout_us,omitempty"`
	Retry     *backoffPolicy `json:"retry,omitempty"`
}

type backoffPolicy struct {
	BaseUS int64   `json:"base_us"`
	MaxUS  int64   `json:"max_us"`
	Jitter float64 `json:"jitter"`
}

// EncodeJobPolicy is the policy column of a job with this timeout (0:
// none) and retry backoff (nil: none); nil, stored as NULL, when it has
// neither. Durations are kept in whole microseconds.
func EncodeJobPolicy(timeout time.Duration, retry *fencedtype.Backoff) []byte {
	if timeout <= 0 && retry == nil {
		return nil
	}
	p := jobPolicy{TimeoutUS: max(timeout.Microseconds(), 0)}
	if retry != nil {
		p.Retry = &backoffPolicy{BaseUS: retry.Base.Microseconds(), MaxUS: retry.Max.Microseconds(), Jitter: retry.Jitter}
	}
	b, _ := json.Marshal(p) // integers and a finite float: cannot fail
	return b
}

// DecodeJobPolicy sets j.Timeout and j.Retry from a policy column read
// back (nil or empty: neither).
func DecodeJobPolicy(b []byte, j *fencedtype.Job) error {
	if len(b) == 0 {
		return nil
	}
	var p jobPolicy
	if err := json.Unmarshal(b, &p); err != nil {
		return fmt.Errorf("job %d: its policy column %q: %w", j.ID, b, err)
	}
	j.Timeout = time.Duration(p.TimeoutUS) * time.Microsecond
	if r := p.Retry; r != nil {
		j.Retry = &fencedtype.Backoff{Base: time.Duration(r.BaseUS) * time.Microsecond,
			Max: time.Duration(r.MaxUS) * time.Microsecond, Jitter: r.Jitter}
	}
	return nil
}
