package fenced_test

import (
	"context"
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/fenced/fenced"
	"github.com/fenced/fenced/internal/test/testdb"
)

// HandleWith refuses an invalid kind and options out of range with an
// *InvalidError naming the field, a nil handler, and any registration
// after Start; Start then refuses to start with the first refusal. A valid
// registration is what Start claims for.
func TestHandleWithRefusesBadInput(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c, err := fenced.Open(ctx, testdb.SQLite(t), fenced.Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := c.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	bad, err := c.NewWorker(fenced.WorkerConfig{})
	if err != nil {
		t.Fatal(err)
	}
	ok := func(context.Context, *fenced.JobRun) error { return nil }
	for name, tc := range map[string]struct {
		kind  string
		h     fenced.Handler
		o     fenced.KindOptions
		field string
	}{
		"an empty kind":         {"", ok, fenced.KindOptions{}, "kind"},
		"a nil handler":         {"k", nil, fenced.KindOptions{}, ""},
		"a timeout under 1ms":   {"k", ok, fenced.KindOptions{Timeout: time.Microsecond}, "timeout"},
		"a negative timeout":    {"k", ok, fenced.KindOptions{Timeout: -time.Second}, "timeout"},
		"negative max attempts": {"k", ok, fenced.KindOptions{MaxAttempts: -1}, "max_attempts"},
		"too many max attempts": {"k", ok, fenced.KindOptions{MaxAttempts: fenced.MaxAttemptsLimit + 1}, "max_attempts"},
		"a nil *Backoff":        {"k", ok, fenced.KindOptions{Retry: (*fenced.Backoff)(nil)}, "retry"},
	} {
		var inv *fenced.InvalidError
		err := bad.HandleWith(tc.kind, tc.h, tc.o)
		if err == nil || tc.field != "" && (!errors.As(err, &inv) || inv.Field != tc.field) {
			t.Errorf("%s: %v, want an *InvalidError of %s", name, err, tc.field)
		}
	}
	if err := bad.HandleWith("k", ok, fenced.KindOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := bad.HandleWith("k", ok, fenced.KindOptions{}); err == nil {
		t.Fatal("a second handler of one kind was accepted")
	}
	if err := bad.Start(ctx); err == nil {
		bad.Stop(ctx)
		t.Fatal("Start ignored the refused registrations")
	}
	w, err := c.NewWorker(fenced.WorkerConfig{})
	if err != nil {
		t.Fatal(err)
	}
	if err := fenced.HandleKindWith(w, func(context.Context, *fenced.JobRun, policyArgs) error { return nil },
		fenced.KindOptions{MaxAttempts: 1001}); err == nil {
		t.Fatal("HandleKindWith accepted invalid options")
	}
	w, err = c.NewWorker(fenced.WorkerConfig{})
	if err != nil {
		t.Fatal(err)
	}
	if err := fenced.HandleKindWith(w, func(context.Context, *fenced.JobRun, policyArgs) error { return nil },
		fenced.KindOptions{Timeout: time.Second}); err != nil {
		t.Fatal(err)
	}
	if err := w.HandleWith("k", ok, fenced.KindOptions{Timeout: time.Minute, MaxAttempts: 3,
		Retry: fenced.RetryFunc(func(*fenced.Job, error) time.Duration { return time.Second })}); err != nil {
		t.Fatal(err)
	}
	if err := w.Start(ctx); err != nil {
		t.Fatal(err)
	}
	defer w.Stop(ctx)
	if err := w.HandleWith("other", ok, fenced.KindOptions{}); err == nil {
		t.Fatal("HandleWith after Start was accepted")
	}
	if _, err := c.NewWorker(fenced.WorkerConfig{Timeout: -time.Second}); !errors.Is(err, fenced.ErrInvalid) {
		t.Fatalf("a worker with a negative timeout: %v", err)
	}
}

// Backoff is a RetryPolicy whose delay is the one the database computes:
// min(Max, Base·2^(n−1)) scaled by a factor in [1−Jitter, 1], whatever the
// attempt, never above Max.
func TestBackoffNextRetry(t *testing.T) {
	t.Parallel()
	var p fenced.RetryPolicy = fenced.Backoff{Base: time.Second, Max: time.Minute, Jitter: 0.5}
	for _, tc := range []struct {
		attempt  int
		min, max time.Duration
	}{
		{1, 500 * time.Millisecond, time.Second},
		{3, 2 * time.Second, 4 * time.Second},
		{7, 30 * time.Second, time.Minute},
		{1000, 30 * time.Second, time.Minute},
	} {
		for range 50 {
			if d := p.NextRetry(&fenced.Job{Attempt: tc.attempt}, nil); d < tc.min || d > tc.max {
				t.Fatalf("attempt %d: %s, want %s to %s", tc.attempt, d, tc.min, tc.max)
			}
		}
	}
	none := fenced.Backoff{Base: time.Second, Max: time.Hour, Jitter: -1}
	if d := none.NextRetry(&fenced.Job{Attempt: 4}, nil); d != 8*time.Second {
		t.Fatalf("without jitter, attempt 4: %s, want 8s", d)
	}
}

// A job's policies are shown in its JSON as timeout_ms and retry, null
// when unset.
func TestJobPoliciesInJSON(t *testing.T) {
	t.Parallel()
	b, err := json.Marshal(fenced.Job{Timeout: 1500 * time.Millisecond,
		Retry: &fenced.Backoff{Base: time.Second, Max: time.Minute, Jitter: 0.25}})
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	if m["timeout_ms"] != 1500.0 || !jsonEqual(m["retry"], map[string]any{"base_ms": 1000.0, "max_ms": 60000.0, "jitter": 0.25}) {
		t.Fatalf("job JSON: timeout_ms %v, retry %v", m["timeout_ms"], m["retry"])
	}
	b, _ = json.Marshal(fenced.Job{})
	m = nil
	json.Unmarshal(b, &m)
	for _, f := range []string{"timeout_ms", "retry"} {
		if v, present := m[f]; !present || v != nil {
			t.Fatalf("a job without policies: %s = %v (present %v), want null", f, v, present)
		}
	}
}

type policyArgs struct{}

func (policyArgs) Kind() string { return "policy-args" }

func (policyArgs) EnqueueOptions() fenced.EnqueueOptions {
	return fenced.EnqueueOptions{Timeout: time.Minute, Retry: &fenced.Backoff{Base: time.Second}}
}

// A typed kind's default options carry a job's own timeout and retry
// backoff, and the options given to the enqueue override them.
func TestArgsParamsCarryPolicies(t *testing.T) {
	t.Parallel()
	p, err := fenced.ArgsParams(policyArgs{}, nil)
	if err != nil || p.Timeout != time.Minute || p.Retry == nil || p.Retry.Base != time.Second {
		t.Fatalf("defaults: %+v, %v", p, err)
	}
	b := &fenced.Backoff{Base: time.Millisecond}
	p, err = fenced.ArgsParams(policyArgs{}, &fenced.EnqueueOptions{Timeout: time.Hour, Retry: b})
	if err != nil || p.Timeout != time.Hour || p.Retry != b {
		t.Fatalf("overridden: %+v, %v", p, err)
	}
}

func jsonEqual(a, b any) bool {
	x, _ := json.Marshal(a)
	y, _ := json.Marshal(b)
	return string(x) == string(y)
}
