package fencedtype

import "time"

// QueuePause is a paused queue: no claim that starts after the pause is
// stored takes a job of it, until it is resumed. Jobs already running are
// not stopped, and jobs can still be enqueued into it. PausedAt is the
// database clock reading of the pause (the first one: pausing a paused
// queue changes nothing).
type QueuePause struct {
	Queue    string    `json:"queue"`
	PausedAt time.Time `json:"paused_at"`
}

// MarshalJSON encodes the pause by its field tags, with its time in
// TimeLayout.
func (p QueuePause) MarshalJSON() ([]byte, error) {
	type fields QueuePause // the same fields, without this method
	return marshal(struct {
		fields
		PausedAt jsonTime `json:"paused_at"`
	}{fields(p), jsonTime(p.PausedAt)})
}
