package jobbench

import (
	"fmt"
	"strings"
)

// The modes of a run.
const (
	BurnDown   = "burn-down"
	Continuous = "continuous"
	FixedRate  = "fixed-rate"
	Wakeup     = "wake-up"
)

// Result is a run's summary.
type Result struct {
	Mode    string `json:"mode"`    // BurnDown or Continuous
	Backend string `json:"backend"` // "postgres" or "sqlite"
	// Jobs worked (succeeded) in the measured time, Seconds.
	Jobs       int64   `json:"jobs"`
	Seconds    float64 `json:"seconds"`
	JobsPerSec float64 `json:"jobs_per_sec"`
	// Inserted jobs, in InsertSeconds: the insert phase of a burn-down, or
	// what the producer inserted during a continuous run.
	Inserted      int64   `json:"inserted"`
	InsertSeconds float64 `json:"insert_seconds"`
	InsertPerSec  float64 `json:"insert_per_sec"`
	Concurrency   int     `json:"workers"`
	Instances     int     `json:"worker_instances"`
	FetchBatch    int     `json:"fetch_batch,omitempty"`
	PoolConns     int     `json:"pool_conns,omitempty"`
	Queue         string  `json:"queue"`
	// A fixed-rate run's offered rate (jobs/s) and its handler's time; a
	// fixed-rate or continuous run's throughput of each window, the mean of
	// the first and the last minute's windows and their ratio
	// (last/first); a fixed-rate run's enqueue→start percentiles.
	Offered     float64  `json:"offered_per_sec,omitempty"`
	WorkMS      float64  `json:"work_ms,omitempty"`
	Windows     []Window `json:"windows,omitempty"`
	FirstMinute float64  `json:"first_minute_jobs_per_sec,omitempty"`
	LastMinute  float64  `json:"last_minute_jobs_per_sec,omitempty"`
	Steadiness  float64  `json:"steadiness,omitempty"`
	Latency     *Latency `json:"latency,omitempty"`
	// WALPerJob is the PostgreSQL write-ahead log written per job while a
	// burn-down's workers worked (claims, ends, history, heartbeats; the
	// whole server's, so run it on a server of its own), in bytes; 0
	// elsewhere.
	WALPerJob float64 `json:"wal_bytes_per_job,omitempty"`
	// DBWork is the rest of a PostgreSQL burn-down's database work per job.
	DBWork *DBWork `json:"db_work,omitempty"`
	// The run's concurrency keys, their per-key limit and its sequences
	// (Options), and what its handlers saw: the most jobs of one key and of
	// one sequence running at once, and sequence jobs started before an
	// earlier job of their sequence (expected at most KeyLimit, 1, 0).
	Keys                  int   `json:"keys,omitempty"`
	KeyLimit              int   `json:"key_limit,omitempty"`
	Sequences             int   `json:"sequences,omitempty"`
	FanOut                int   `json:"fan_out,omitempty"` // a workflow run's (Options.FanOut)
	Chain                 int   `json:"chain,omitempty"`   // a workflow run's (Options.Chain)
	MaxRunningPerKey      int   `json:"max_running_per_key,omitempty"`
	MaxRunningPerSequence int   `json:"max_running_per_sequence,omitempty"`
	SequenceOutOfOrder    int64 `json:"sequence_out_of_order,omitempty"`
	// Attempts that did not succeed at once (expected 0 each).
	Retried int64 `json:"retried"`
	Stale   int64 `json:"stale"`
	Lost    int64 `json:"lost"`
	// HandedOff counts the attempts the workers' completions were handed
	// (a workflow run's hand-off, docs/design.md §6.18) instead of claiming.
	HandedOff int64 `json:"handed_off,omitempty"`
}

func rate(n int64, secs float64) float64 {
	if secs <= 0 {
		return 0
	}
	return float64(n) / secs
}

// String is the one-line summary.
func (r *Result) String() string {
	var b strings.Builder
	switch r.Mode {
	case BurnDown:
		fmt.Fprintf(&b, "bench: burn-down %d jobs in %.2fs = %.0f jobs/s (insert %.0f jobs/s)",
			r.Jobs, r.Seconds, r.JobsPerSec, r.InsertPerSec)
		if r.WALPerJob > 0 {
			fmt.Fprintf(&b, ", WAL %.0f bytes/job", r.WALPerJob)
		}
		if w := r.DBWork; w != nil {
			n := float64(r.Jobs)
			fmt.Fprintf(&b, ", %.0f statements in %.0f round trips (%.3f a job)", w.Statements*n, w.RoundTrips*n, w.Statements)
			if w.WALRecords {
				fmt.Fprintf(&b, ", %.2f row writes/job (%.2f HOT), %.2f row locks, %.2f index inserts", w.RowWrites, w.HOTUpdates, w.RowLocks, w.IndexInserts)
			}
		}
	case Wakeup:
		fmt.Fprintf(&b, "bench: wake-up of an idle worker, %d single jobs", r.Jobs)
		if l := r.Latency; l != nil {
			fmt.Fprintf(&b, ": enqueue->start p50 %.1fms p95 %.1fms p99 %.1fms max %.1fms", l.P50, l.P95, l.P99, l.Max)
		}
	case FixedRate:
		fmt.Fprintf(&b, "bench: fixed-rate %.0f jobs/s offered for %.1fs (work %gms): worked %d = %.0f jobs/s, inserted %d; first minute %.0f jobs/s, last minute %.0f jobs/s (%.2fx)",
			r.Offered, r.Seconds, r.WorkMS, r.Jobs, r.JobsPerSec, r.Inserted, r.FirstMinute, r.LastMinute, r.Steadiness)
		if l := r.Latency; l != nil {
			fmt.Fprintf(&b, "; enqueue->start p50 %.1fms p95 %.1fms p99 %.1fms", l.P50, l.P95, l.P99)
		}
	default:
		fmt.Fprintf(&b, "bench: continuous %.1fs: worked %d = %.0f jobs/s, inserted %d = %.0f jobs/s",
			r.Seconds, r.Jobs, r.JobsPerSec, r.Inserted, r.InsertPerSec)
		if r.Seconds >= 120 && r.Steadiness > 0 {
			fmt.Fprintf(&b, "; first minute %.0f jobs/s, last minute %.0f jobs/s (%.2fx)", r.FirstMinute, r.LastMinute, r.Steadiness)
		}
	}
	fmt.Fprintf(&b, " backend=%s workers=%d", r.Backend, r.Concurrency)
	if r.Instances > 1 {
		fmt.Fprintf(&b, " instances=%d", r.Instances)
	}
	if r.PoolConns > 0 {
		fmt.Fprintf(&b, " pool=%d", r.PoolConns)
	}
	if r.Keys > 0 {
		fmt.Fprintf(&b, " keys=%d key-limit=%d (at most %d of a key at once)", r.Keys, r.KeyLimit, r.MaxRunningPerKey)
	}
	if r.FanOut > 0 {
		fmt.Fprintf(&b, " workflows of 1→%d→1", r.FanOut)
	}
	if r.Chain > 0 {
		fmt.Fprintf(&b, " workflows of chains of %d", r.Chain)
	}
	if r.HandedOff > 0 {
		fmt.Fprintf(&b, " (%d handed off)", r.HandedOff)
	}
	if r.Sequences > 0 {
		fmt.Fprintf(&b, " sequences=%d (at most %d of a sequence at once, %d out of order)", r.Sequences, r.MaxRunningPerSequence, r.SequenceOutOfOrder)
	}
	if n := r.Retried + r.Stale + r.Lost; n > 0 {
		fmt.Fprintf(&b, " (retried=%d stale=%d lost=%d)", r.Retried, r.Stale, r.Lost)
	}
	return b.String()
}

// result fills what every mode reports.
func (b *bench) result(mode string, ws workers) *Result {
	s := ws.stats()
	return &Result{Mode: mode, Backend: string(b.db.backend), Concurrency: b.o.Concurrency, Instances: b.o.Instances,
		FetchBatch: b.o.FetchBatch, PoolConns: b.db.pool, Queue: b.o.Queue,
		Retried: s.Retried, Stale: s.Stale, Lost: s.Lost, HandedOff: s.HandedOff}
}
