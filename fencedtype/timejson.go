package fencedtype

import (
	"bytes"
	"encoding/json"
	"time"
)

// TimeLayout is the one form in which fenced writes a time, for people and
// programs alike: the command's output, --json, the HTTP service's JSON and
// its X-Fenced-DB-Time header, and error messages. It is RFC 3339 in UTC
// with exactly six fractional digits: microseconds, the finest precision
// any backend stores (PostgreSQL and MySQL keep microseconds; SQLite keeps
// milliseconds, written with three trailing zeros), in a fixed width that
// every RFC 3339 parser reads (Python's datetime.fromisoformat before 3.11
// included).
const TimeLayout = "2006-01-02T15:04:05.000000Z07:00"

// FormatTime writes t in TimeLayout, in UTC. A fraction below a
// microsecond, which no database time carries, is dropped.
func FormatTime(t time.Time) string { return t.UTC().Format(TimeLayout) }

// jsonTime is a time that encodes in TimeLayout; the values' MarshalJSON
// methods put it in place of their time fields.
type jsonTime time.Time

func (t jsonTime) MarshalJSON() ([]byte, error) {
	return []byte(`"` + FormatTime(time.Time(t)) + `"`), nil
}

// IsZero makes omitzero leave out a zero time.
func (t jsonTime) IsZero() bool { return time.Time(t).IsZero() }

// marshal encodes v as JSON without escaping <, > and & (the encoder that
// called MarshalJSON escapes them if it was asked to).
func marshal(v any) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n")), nil
}

// MarshalJSON encodes the lease by its field tags, with its time in
// TimeLayout.
func (l Lease) MarshalJSON() ([]byte, error) {
	type fields Lease // the same fields, without this method
	return marshal(struct {
		fields
		ExpiresAt jsonTime `json:"expires_at,omitzero"`
	}{fields(l), jsonTime(l.ExpiresAt)})
}

// MarshalJSON encodes the job by its field tags, with its times in
// TimeLayout.
func (j Job) MarshalJSON() ([]byte, error) {
	type fields Job // the same fields, without this method
	return marshal(struct {
		fields
		RunAt          jsonTime     `json:"run_at"`
		LeaseExpiresAt *jsonTime    `json:"lease_expires_at"`
		CreatedAt      jsonTime     `json:"created_at"`
		AttemptedAt    *jsonTime    `json:"attempted_at"`
		FinishedAt     *jsonTime    `json:"finished_at"`
		TimeoutMs      *int64       `json:"timeout_ms"`
		Retry          *jsonBackoff `json:"retry"`
	}{fields(j), jsonTime(j.RunAt), (*jsonTime)(j.LeaseExpiresAt), jsonTime(j.CreatedAt),
		(*jsonTime)(j.AttemptedAt), (*jsonTime)(j.FinishedAt), timeoutMs(j.Timeout), backoffJSON(j.Retry)})
}

// jsonBackoff is a job's retry backoff as JSON: durations in whole
// milliseconds (rounded down), as every duration of the HTTP service.
type jsonBackoff struct {
	BaseMs int64   `json:"base_ms"`
	MaxMs  int64   `json:"max_ms"`
	Jitter float64 `json:"jitter"`
}

func backoffJSON(b *Backoff) *jsonBackoff {
	if b == nil {
		return nil
	}
	return &jsonBackoff{BaseMs: b.Base.Milliseconds(), MaxMs: b.Max.Milliseconds(), Jitter: b.Jitter}
}

func timeoutMs(d time.Duration) *int64 {
	if d <= 0 {
		return nil
	}
	ms := d.Milliseconds()
	return &ms
}

// MarshalJSON encodes the attempt by its field tags, with its times in
// TimeLayout.
func (a JobAttempt) MarshalJSON() ([]byte, error) {
	type fields JobAttempt // the same fields, without this method
	return marshal(struct {
		fields
		StartedAt jsonTime  `json:"started_at"`
		EndedAt   *jsonTime `json:"ended_at"`
	}{fields(a), jsonTime(a.StartedAt), (*jsonTime)(a.EndedAt)})
}
