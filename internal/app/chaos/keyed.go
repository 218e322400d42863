package chaos

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/fenced/fenced"
)

// Workloads of a run's jobs (Options.Workload).
const (
	// WorkloadCount: each job increments a counter in one job-fenced
	// transaction that completes it (the default).
	WorkloadCount = "count"
	// WorkloadKeyed: each job carries a concurrency key with a declared
	// limit of 1 or 2; its attempt writes a START row, works, then writes
	// an END row together with the count workload's increment and its
	// completion. The keyed checker verifies the limits from the rows.
	WorkloadKeyed = "keyed"
)

// KeyedKind is the kind of the keyed workload's jobs.
const KeyedKind = "chaos.keyed"

// keyedKeys is how many concurrency keys the keyed workload spreads its
// jobs over: keys of even index have limit 1, of odd index limit 2.
const keyedKeys = 48

func keyedKey(i int) string { return fmt.Sprintf("c%02d", i) }

// keyedLimit is the per-key limit declared for key i.
func keyedLimit(i int) int { return 1 + i%2 }

// keyedSchemaSQL creates the keyed workload's ledger of attempt marks, and
// a counter per concurrency key (the END transaction increments it as the
// count workload does, so the job checkers hold it to exactly one effect).
// Every row's time is the database clock at its insert (d.at; on SQLite
// the checker orders rows by id instead, d.keyedAt).
func keyedSchemaSQL(d *dialect) []string {
	qs := []string{fmt.Sprintf(`CREATE TABLE chaos_keyed_ledger (
    id      %s,
    job_id  %s NOT NULL,
    fence   %[2]s NOT NULL,
    ckey    %s NOT NULL,
    mark    %[3]s NOT NULL CHECK (mark IN ('start', 'end')),
    proc    %[3]s NOT NULL,
    at      %s)%s`, d.id, d.bigint, d.text, d.at, d.tableEnd),
		// for the checker's pairing of END rows with effects
		`CREATE INDEX chaos_keyed_ledger_job ON chaos_keyed_ledger (job_id)`}
	for i := range keyedKeys {
		qs = append(qs, fmt.Sprintf(`INSERT INTO chaos_counters VALUES ('%s', 0)`, keyedKey(i)))
	}
	return qs
}

// keyedMarkSQL inserts a START or END row of an attempt, with ?
// placeholders (dialect.sql).
const keyedMarkSQL = `INSERT INTO chaos_keyed_ledger (job_id, fence, ckey, mark, proc) VALUES (?, ?, ?, ?, ?)`

// declareKeyedLimits declares each key's own limit on the run's queue.
func declareKeyedLimits(ctx context.Context, c *client) error {
	for i := range keyedKeys {
		if _, err := c.SetJobLimit(ctx, fenced.JobLimit{Queue: queue, ConcurrencyKey: keyedKey(i), PerKey: keyedLimit(i)}); err != nil {
			return fmt.Errorf("declare the limit of key %s: %w", keyedKey(i), err)
		}
	}
	return nil
}

// keyedParams is one keyed job, on a key drawn from rng in proportion to
// its limit, so that every slot sees the same load.
func keyedParams(rng *rand.Rand) fenced.EnqueueParams {
	slot := rng.IntN(keyedKeys / 2 * 3) // 3 slots per pair of keys
	key := keyedKey(slot / 3 * 2)       // a pair's first slot is its limit-1 key's
	if slot%3 != 0 {
		key = keyedKey(slot/3*2 + 1)
	}
	return fenced.EnqueueParams{Kind: KeyedKind, Queue: queue, MaxAttempts: jobAttempts,
		ConcurrencyKey: key, Args: jobArgs{Key: key}}
}

// handleKeyed runs one attempt of a keyed job: a job-fenced transaction
// inserts its START row; the handler works 50–250 ms (the nemesis's pauses
// land here: a worker runs up to Concurrency attempts at once, so a pause
// finds some between their START and END), short enough that the keys'
// 72 slots keep up with the long variant's 100 jobs a second; one attempt in twenty then fails on purpose; otherwise a second
// job-fenced transaction increments the key's counter, inserts the count
// workload's ledger row and the END row, and completes the job. Both
// transactions carry the attempt's fence, so once the attempt is stale
// they are refused. Half the attempts ignore their context's end, so that
// a paused attempt's END reaches the database and must be refused.
func (h *jobHandler) handleKeyed(ctx context.Context, run *fenced.JobRun) error {
	var args jobArgs
	if err := json.Unmarshal(run.Args, &args); err != nil {
		return fenced.Discard(err)
	}
	var work time.Duration
	var stubborn, fail bool
	h.draw(func(r *rand.Rand) {
		work = time.Duration(50+r.IntN(200)) * time.Millisecond
		stubborn = r.IntN(2) == 0
		fail = r.IntN(20) == 0
	})
	if stubborn {
		ctx = context.WithoutCancel(ctx)
	}
	call := time.Now()
	err := run.Tx(ctx, func(tx fenced.Tx) error {
		_, err := tx.Exec(ctx, h.d.sql(keyedMarkSQL), run.ID, run.Fence, args.Key, "start", h.rec.proc)
		return err
	})
	if err != nil {
		// Only refusals are recorded: a START that committed completes
		// nothing, so it is not a write the job checkers judge.
		h.rec.job(run.ID, run.Fence, call, jobResult(err))
		return err
	}
	time.Sleep(work) // the work; a pause here outlives the lease
	call = time.Now()
	if fail {
		h.rec.job(run.ID, run.Fence, call, jobFailed)
		return errors.New(errDeliberate)
	}
	err = run.Tx(ctx, func(tx fenced.Tx) error {
		n, err := h.increment(ctx, tx, run, args.Key)
		if err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, h.d.sql(keyedMarkSQL), run.ID, run.Fence, args.Key, "end", h.rec.proc); err != nil {
			return err
		}
		return run.CompleteTx(ctx, tx, map[string]int64{"before": n})
	})
	h.rec.job(run.ID, run.Fence, call, jobResult(err))
	return err
}
