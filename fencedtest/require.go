package fencedtest

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/fenced/fenced"
)

// RequireInserted fails the test unless a job of kind matching m (nil:
// any) was enqueued and committed, and returns it (the newest, when
// several match). It reads through c, outside any transaction: use
// RequireInsertedTx for jobs enqueued in a transaction still open.
func RequireInserted(t testing.TB, c *fenced.Client, kind string, m *Match) *fenced.Job {
	t.Helper()
	v, err := requireInserted(context.Background(), c, nil, kind, m)
	return must(t, v, err)
}

// RequireInsertedTx is RequireInserted inside tx: it also sees the jobs
// tx enqueued (EnqueueTx) before it commits. The returned job has the
// fields a Match reads, its ID, Kind, MaxAttempts and Attempt; the others
// are zero.
func RequireInsertedTx(t testing.TB, c *fenced.Client, tx fenced.Tx, kind string, m *Match) *fenced.Job {
	t.Helper()
	v, err := requireInserted(context.Background(), c, tx, kind, m)
	return must(t, v, err)
}

// RequireNotInserted fails the test if a job of kind matching m (nil: any)
// was enqueued and committed.
func RequireNotInserted(t testing.TB, c *fenced.Client, kind string, m *Match) {
	t.Helper()
	mustNot(t, requireNotInserted(context.Background(), c, nil, kind, m))
}

// RequireNotInsertedTx is RequireNotInserted inside tx.
func RequireNotInsertedTx(t testing.TB, c *fenced.Client, tx fenced.Tx, kind string, m *Match) {
	t.Helper()
	mustNot(t, requireNotInserted(context.Background(), c, tx, kind, m))
}

// RequireManyInserted fails the test unless the jobs of the kinds named in
// want are exactly want, in the order they were enqueued (by id): as many,
// each of the expected kind and matching its Match. It returns them.
func RequireManyInserted(t testing.TB, c *fenced.Client, want []Expected) []*fenced.Job {
	t.Helper()
	v, err := requireMany(context.Background(), c, nil, want)
	return must(t, v, err)
}

// RequireManyInsertedTx is RequireManyInserted inside tx (see
// RequireInsertedTx for what the jobs hold).
func RequireManyInsertedTx(t testing.TB, c *fenced.Client, tx fenced.Tx, want []Expected) []*fenced.Job {
	t.Helper()
	v, err := requireMany(context.Background(), c, tx, want)
	return must(t, v, err)
}

func must[T any](t testing.TB, v T, err error) T {
	t.Helper()
	if err != nil {
		t.Fatalf("%v", err)
	}
	return v
}

func mustNot(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatalf("%v", err)
	}
}

func requireInserted(ctx context.Context, c *fenced.Client, tx fenced.Tx, kind string, m *Match) (*fenced.Job, error) {
	jobs, err := jobsOf(ctx, c, tx, []string{kind})
	if err != nil {
		return nil, err
	}
	var why []string
	for _, j := range slices.Backward(jobs) {
		w, err := m.mismatch(j)
		if err != nil {
			return nil, err
		}
		if w == "" {
			return j, nil
		}
		why = append(why, fmt.Sprintf("job %d: %s", j.ID, w))
	}
	if len(jobs) == 0 {
		return nil, fmt.Errorf("fencedtest: no job of kind %q was enqueued", kind)
	}
	return nil, fmt.Errorf("fencedtest: none of the %d jobs of kind %q matches:\n\t%s", len(jobs), kind, strings.Join(why, "\n\t"))
}

func requireNotInserted(ctx context.Context, c *fenced.Client, tx fenced.Tx, kind string, m *Match) error {
	jobs, err := jobsOf(ctx, c, tx, []string{kind})
	if err != nil {
		return err
	}
	for _, j := range jobs {
		w, err := m.mismatch(j)
		if err != nil {
			return err
		}
		if w == "" {
			return fmt.Errorf("fencedtest: job %d of kind %q was enqueued (queue %s, args %s), want none", j.ID, kind, j.Queue, j.Args)
		}
	}
	return nil
}

func requireMany(ctx context.Context, c *fenced.Client, tx fenced.Tx, want []Expected) ([]*fenced.Job, error) {
	var kinds []string
	for _, e := range want {
		kinds = append(kinds, e.Kind)
	}
	jobs, err := jobsOf(ctx, c, tx, kinds)
	if err != nil {
		return nil, err
	}
	got := make([]string, len(jobs))
	for i, j := range jobs {
		got[i] = j.Kind
	}
	if len(jobs) != len(want) {
		return nil, fmt.Errorf("fencedtest: %d jobs of kinds %q were enqueued (%q), want %d", len(jobs), slices.Compact(slices.Sorted(slices.Values(kinds))), got, len(want))
	}
	for i, e := range want {
		j := jobs[i]
		if j.Kind != e.Kind {
			return nil, fmt.Errorf("fencedtest: job %d of the %d is of kind %q, want %q (kinds in order: %q)", i+1, len(jobs), j.Kind, e.Kind, got)
		}
		w, err := e.Match.mismatch(j)
		if err != nil {
			return nil, err
		}
		if w != "" {
			return nil, fmt.Errorf("fencedtest: job %d of the %d (id %d, kind %q): %s", i+1, len(jobs), j.ID, j.Kind, w)
		}
	}
	return jobs, nil
}

// jobsOf returns every job of the kinds, by id ascending: through the
// Client when tx is nil, else through tx.
func jobsOf(ctx context.Context, c *fenced.Client, tx fenced.Tx, kinds []string) ([]*fenced.Job, error) {
	kinds = slices.Compact(slices.Sorted(slices.Values(kinds)))
	if tx != nil {
		return jobsInTx(ctx, c, tx, kinds)
	}
	var out []*fenced.Job
	for _, kind := range kinds {
		for after := int64(0); ; {
			page, err := c.ListJobs(ctx, fenced.JobFilter{Kind: kind, AfterID: after, Limit: fenced.MaxListLimit})
			if err != nil {
				return nil, fmt.Errorf("fencedtest: list jobs of kind %q: %w", kind, err)
			}
			out = append(out, page...)
			if len(page) < fenced.MaxListLimit {
				break
			}
			after = page[len(page)-1].ID
		}
	}
	slices.SortFunc(out, func(a, b *fenced.Job) int { return cmp.Compare(a.ID, b.ID) })
	return out, nil
}
