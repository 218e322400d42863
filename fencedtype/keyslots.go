package fencedtype

// KeySlots is the load of one concurrency key of a queue, as read by
// Client.ListKeySlots: the slots in use (Running), the jobs that wait for
// one (Waiting) and the limit that bounds them.
//
// Running counts the key's running attempts, expired ones not yet recovered
// included (their slot frees only when recovery takes the job back), as
// the claim counts them. Waiting counts the key's queued jobs that are due
// (run_at at or before the database's now); jobs scheduled later are not
// counted.
//
// Limit is the per-key limit the claim applies, 0 when none is declared:
// the key's own limit, else the default of the kind of its jobs when they
// are all of one kind, else the queue's default. When the key's running
// and due jobs are of several kinds, kind defaults are not reported (each
// kind's jobs may be bounded by their own kind's default): Limit is then
// the key's own limit, else the queue's default.
type KeySlots struct {
	Queue          string `json:"queue"`
	ConcurrencyKey string `json:"concurrency_key"`
	Limit          int    `json:"limit"`
	Running        int64  `json:"running"`
	Waiting        int64  `json:"waiting"`
}

// Full reports whether the key's slots are all in use: a limit applies and
// Running has reached it.
func (k KeySlots) Full() bool { return k.Limit > 0 && k.Running >= int64(k.Limit) }

// HeldBack is the number of due jobs the key's limit holds back: Waiting
// when the key is Full, else 0.
func (k KeySlots) HeldBack() int64 {
	if k.Full() {
		return k.Waiting
	}
	return 0
}
