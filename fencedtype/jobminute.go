package fencedtype

import "time"

// WaitBucketsMS are the upper edges, in milliseconds, of the buckets a
// JobMinute counts claim waits in: bucket i holds waits below
// WaitBucketsMS[i] (and at least the edge before it); the last bucket,
// len(WaitBucketsMS), holds the waits of an hour or more.
var WaitBucketsMS = []int64{1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 2000, 5000,
	10000, 30000, 60000, 300000, 3600000}

// JobMinute is what the jobs of one queue did in one minute of the
// database clock, as the maintenance rolled it up once the minute was
// over (docs/design.md, "Charts over time").
//
// Finished jobs are counted by the minute of their finished time;
// retried and lost attempts by the minute their attempt ended. Waits
// counts, per bucket of WaitBucketsMS, the claim wait (run_at to the start
// of the attempt: enqueue to start for a job that was due at once) of the
// last attempt of each job that succeeded or failed in the minute. Depth
// is the number of queued jobs (due or not) when the minute was rolled up,
// -1 when it was rolled up later than the minute after it (a backfill: the
// depth of then is not known).
//
// Each rolled-up minute also has a marker row of Queue "": its counts are
// zero and its Depth is the total of the queued jobs (or -1), so a minute
// whose queues were all idle is told from one not rolled up, and a queue
// without a row in a minute whose marker has a depth had none queued.
type JobMinute struct {
	Minute    time.Time `json:"minute"` // its start
	Queue     string    `json:"queue"`
	Succeeded int64     `json:"succeeded"`
	Failed    int64     `json:"failed"`    // to the dead letter
	Cancelled int64     `json:"cancelled"` // finished as cancelled
	Retried   int64     `json:"retried"`   // attempts that failed and were queued again
	Lost      int64     `json:"lost"`      // attempts whose lease expired and were recovered
	Depth     int64     `json:"depth"`
	Waits     []int64   `json:"waits"` // len(WaitBucketsMS)+1 counts
}

// WaitBucket is the bucket of WaitBucketsMS a wait of ms milliseconds
// falls in.
func WaitBucket(ms int64) int {
	for i, edge := range WaitBucketsMS {
		if ms < edge {
			return i
		}
	}
	return len(WaitBucketsMS)
}
