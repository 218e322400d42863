package drivertest

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"math/big"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/fenced/fenced"
)

// dupArgs gives the key "b" twice: PostgreSQL's jsonb would store
// {"a": 2, "b": 3}, SQLite and MariaDB the text as written.
const dupArgs = `{"b": 1.10, "a": 2, "b": 3}`

// runDuplicateKeys: JSON that gives a key twice in one object, at any
// depth, is refused at every entry point of the library with an
// *InvalidError naming the field and the key, and nothing is written; JSON
// that is accepted reads back as the same value on every backend.
// (Progress is a Go struct, whose counters cannot repeat a key; the HTTP
// service refuses a repeated key in its body.)
func runDuplicateKeys(t *testing.T, b Backend) {
	t.Run("RefusedAtEveryEntryPoint", func(t *testing.T) {
		t.Parallel()
		e := setup(t, b)
		run := e.enqueue(t, fenced.EnqueueParams{Kind: "running"})
		a := e.claimOne(t, "A", long)
		l := e.acquire(t, "dup", "A", long)
		inLeaseTx := func(fn func(tx fenced.Tx) error) error {
			return e.c.LeaseTx(ctx(t), *l, fn)
		}
		for _, v := range []struct {
			name string
			json string
		}{
			{"TopLevel", dupArgs},
			{"Nested", `{"list": [{"x": 1}, {"x": 1, "y": {"k": 1, "k": 2}}]}`},
			{"Escaped", `{"key": 1, "\u006bey": 2}`},
		} {
			raw := json.RawMessage(v.json)
			for name, call := range map[string]func() (field string, err error){
				"Enqueue": func() (string, error) {
					_, _, err := e.c.Enqueue(ctx(t), fenced.EnqueueParams{Kind: "k", Args: raw})
					return "args", err
				},
				"EnqueueBytes": func() (string, error) {
					_, _, err := e.c.Enqueue(ctx(t), fenced.EnqueueParams{Kind: "k", Args: []byte(v.json)})
					return "args", err
				},
				"EnqueueTx": func() (string, error) {
					return "args", inLeaseTx(func(tx fenced.Tx) error {
						_, _, err := e.c.EnqueueTx(ctx(t), tx, fenced.EnqueueParams{Kind: "k", Args: raw})
						return err
					})
				},
				"EnqueueMany": func() (string, error) {
					_, err := e.c.EnqueueMany(ctx(t), nil, []fenced.EnqueueParams{{Kind: "ok"}, {Kind: "k", Args: raw}})
					return "args", err
				},
				"EnqueueBulk": func() (string, error) {
					_, err := e.c.EnqueueBulk(ctx(t), nil, []fenced.EnqueueParams{{Kind: "ok"}, {Kind: "k", Args: raw}})
					return "args", err
				},
				"EnqueueBulkTx": func() (string, error) {
					return "args", inLeaseTx(func(tx fenced.Tx) error {
						_, err := e.c.EnqueueBulk(ctx(t), tx, []fenced.EnqueueParams{{Kind: "k", Args: raw}})
						return err
					})
				},
				"CompleteJob": func() (string, error) {
					return "output", e.c.CompleteJob(ctx(t), a.Ref(), raw)
				},
				"CompleteJobTx": func() (string, error) {
					return "output", e.c.JobTx(ctx(t), a.Ref(), func(tx fenced.Tx) error {
						return e.c.CompleteJobTx(ctx(t), tx, a.Ref(), raw)
					})
				},
				"EndJob": func() (string, error) {
					_, err := e.c.EndJob(ctx(t), nil, fenced.JobEnd{Ref: a.Ref(), Kind: fenced.EndComplete, Output: raw})
					return "output", err
				},
			} {
				field, err := call()
				var inv *fenced.InvalidError
				if !errors.As(err, &inv) || !errors.Is(err, fenced.ErrInvalid) || inv.Field != field ||
					!strings.Contains(inv.Reason, "twice") {
					t.Errorf("%s %s: want an *InvalidError on %s saying the key is given twice, got %v", name, v.name, field, err)
				}
			}
		}
		jobs, err := e.c.ListJobs(ctx(t), fenced.JobFilter{})
		wantNoErr(t, err, "list")
		if len(jobs) != 1 {
			t.Fatalf("refused enqueues wrote jobs: %d jobs exist, want 1", len(jobs))
		}
		if j, _ := e.job(t, run.ID); j.State != fenced.JobRunning || len(j.Output) != 0 {
			t.Fatalf("refused completions wrote the job: %s with output %s", j.State, j.Output)
		}
	})
	t.Run("AWorkersOutputWithADuplicateKeyFailsTheJob", func(t *testing.T) {
		t.Parallel()
		e := setup(t, b)
		e.newWorker(t, fenced.WorkerConfig{PollInterval: 20 * time.Millisecond}, map[string]fenced.Handler{
			"dup": func(_ context.Context, j *fenced.JobRun) error {
				j.SetOutput(json.RawMessage(dupArgs))
				return nil
			},
		})
		j := e.enqueue(t, fenced.EnqueueParams{Kind: "dup", MaxAttempts: 3})
		got := e.waitState(t, j.ID, fenced.JobFailed)
		if got.Attempt != 1 || !strings.Contains(got.LastError, "twice") || len(got.Output) != 0 {
			t.Fatalf("the job = attempt %d, error %q, output %s; want failed at once, saying why, without output",
				got.Attempt, got.LastError, got.Output)
		}
	})
	t.Run("AcceptedJSONReadsBackTheSame", func(t *testing.T) {
		t.Parallel()
		e := setup(t, b)
		values := []string{
			`{"b": 1.10, "a": 2}`,
			`{"a": {"a": {"a": 1}}, "b": [{"a": 1}, {"a": 2}], "c": {}}`,
			`{"é": 1, "e\u0301": 2, "E": 3, "e": 4, "\u00e8": 5, "": 6, "\/": 7}`,
			`{"k0":0,"k1":1,"k2":2,"k3":3,"k4":4,"k5":5,"k6":6,"k7":7,"k8":8,"k9":9,"k10":[1e2, -0.5, 12345678901234567890]}`,
			`[{"x": "\ud83d\ude00"}, {"x": null}, true, "a\"b"]`,
		}
		for _, v := range values {
			j := e.enqueue(t, fenced.EnqueueParams{Kind: "k", Args: json.RawMessage(v)})
			if got, _ := e.job(t, j.ID); !sameJSON(t, got.Args, []byte(v)) {
				t.Errorf("args %s read back as %s", v, got.Args)
			}
		}
		n, err := e.c.EnqueueBulk(ctx(t), nil, []fenced.EnqueueParams{{Kind: "bulk", Args: json.RawMessage(values[0])}})
		if err != nil || n != 1 {
			t.Fatalf("bulk enqueue = %d, %v", n, err)
		}
		jobs, err := e.c.ListJobs(ctx(t), fenced.JobFilter{Kind: "bulk"})
		wantNoErr(t, err, "list")
		if len(jobs) != 1 || !sameJSON(t, jobs[0].Args, []byte(values[0])) {
			t.Errorf("bulk args %s read back as %+v", values[0], jobs)
		}
		for _, v := range values {
			j := e.enqueue(t, fenced.EnqueueParams{Kind: "out", Queue: "out"})
			a := e.claim(t, "out", "A", 1, long)
			if len(a) != 1 || a[0].ID != j.ID {
				t.Fatalf("claimed %+v, want job %d", a, j.ID)
			}
			wantNoErr(t, e.c.CompleteJob(ctx(t), a[0].Ref(), json.RawMessage(v)), "complete")
			if got, _ := e.job(t, j.ID); !sameJSON(t, got.Output, []byte(v)) {
				t.Errorf("output %s read back as %s", v, got.Output)
			}
		}
	})
}

// sameJSON reports whether two JSON texts hold the same value: the
// backends may reorder keys, drop spaces and write a number another way
// (PostgreSQL's jsonb writes 1e2 as 100), but not change a value.
func sameJSON(t *testing.T, a, b []byte) bool {
	t.Helper()
	decode := func(b []byte) any {
		d := json.NewDecoder(bytes.NewReader(b))
		d.UseNumber()
		var v any
		if err := d.Decode(&v); err != nil {
			t.Fatalf("decode %q: %v", b, err)
		}
		return v
	}
	return sameValue(decode(a), decode(b))
}

func sameValue(a, b any) bool {
	switch x := a.(type) {
	case json.Number:
		y, ok := b.(json.Number)
		if !ok {
			return false
		}
		fx, _, ex := big.ParseFloat(string(x), 10, 256, big.ToNearestEven)
		fy, _, ey := big.ParseFloat(string(y), 10, 256, big.ToNearestEven)
		return ex == nil && ey == nil && fx.Cmp(fy) == 0
	case map[string]any:
		y, ok := b.(map[string]any)
		if !ok || len(x) != len(y) {
			return false
		}
		for k, v := range x {
			if w, ok := y[k]; !ok || !sameValue(v, w) {
				return false
			}
		}
		return true
	case []any:
		y, ok := b.([]any)
		if !ok || len(x) != len(y) {
			return false
		}
		for i := range x {
			if !sameValue(x[i], y[i]) {
				return false
			}
		}
		return true
	default:
		return reflect.DeepEqual(a, b)
	}
}
