package fencedtype

// JobLimit is a declared limit on how many jobs of a queue may be running at
// once. Zero in a field means no limit from that field.
//
// A limit applies to one of three scopes:
//
//   - Queue alone (Kind and ConcurrencyKey empty): PerKey is the default
//     limit of every concurrency key of the queue; Global bounds the running
//     jobs of the queue, whatever their kind or key.
//   - Queue and Kind: PerKey is the default limit of the concurrency keys of
//     jobs of that kind (it overrides the queue's); Global bounds the running
//     jobs of that queue and kind.
//   - Queue and ConcurrencyKey (Kind empty): PerKey is that key's own limit,
//     overriding every default; Global must be zero.
//
// The running attempts of a key are counted across the kinds of its queue;
// a job is admitted while that count is below the limit that applies to the
// job (its key's override, else its kind's default, else its queue's). A
// job whose key has no declared limit in any scope runs unlimited.
type JobLimit struct {
	Queue          string `json:"queue"`
	Kind           string `json:"kind"`
	ConcurrencyKey string `json:"concurrency_key"`
	PerKey         int    `json:"per_key"`
	Global         int    `json:"global"`
}
