package drivertest

import (
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/fenced/fenced"
)

// runJobMetadata: a job's metadata (a JSON object) is stored by every
// enqueue path — one job, a batch, a bulk batch copied in or inserted, a
// job with an idempotency key — and returned unchanged by the reads and by
// the claim; a job without metadata has none; metadata that is not a JSON
// object of at most MaxMetadataBytes, or that gives a key twice, is refused
// and nothing is written (docs/design.md §6.2).
func runJobMetadata(t *testing.T, b Backend) {
	t.Run("StoredByEveryEnqueueAndReadBack", func(t *testing.T) {
		t.Parallel()
		e := setup(t, b)
		meta := func(i int) json.RawMessage {
			return json.RawMessage(`{"traceparent":"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01","n":` +
				string(rune('0'+i%10)) + `,"nested":{"é":[true,null]}}`)
		}
		one := e.enqueue(t, fenced.EnqueueParams{Kind: "k", Metadata: meta(1)})
		wantMetadata(t, "Enqueue's answer", one.Metadata, meta(1))
		keyed := e.enqueue(t, fenced.EnqueueParams{Kind: "k", IdempotencyKey: "key", Metadata: map[string]string{"tenant": "42"}})
		wantMetadata(t, "keyed Enqueue's answer", keyed.Metadata, json.RawMessage(`{"tenant":"42"}`))
		again, existing, err := e.c.Enqueue(ctx(t), fenced.EnqueueParams{Kind: "k", IdempotencyKey: "key", Metadata: meta(9)})
		wantNoErr(t, err, "enqueue again")
		if !existing {
			t.Fatal("the idempotency key did not match")
		}
		wantMetadata(t, "the existing job", again.Metadata, json.RawMessage(`{"tenant":"42"}`))
		none := e.enqueue(t, fenced.EnqueueParams{Kind: "k"})
		if none.Metadata != nil {
			t.Fatalf("a job enqueued without metadata has %s", none.Metadata)
		}
		many, err := e.c.EnqueueMany(ctx(t), nil, []fenced.EnqueueParams{{Kind: "k", Metadata: meta(2)}, {Kind: "k"}, {Kind: "k", Metadata: meta(3)}})
		wantNoErr(t, err, "enqueue many")
		wantMetadata(t, "batch job 1", many[0].Job.Metadata, meta(2))
		if many[1].Job.Metadata != nil {
			t.Fatalf("batch job 2 without metadata has %s", many[1].Job.Metadata)
		}
		wantMetadata(t, "batch job 3", many[2].Job.Metadata, meta(3))
		// A bulk batch that runs now without keys (copied in on PostgreSQL),
		// and one with a delay (inserted).
		n, err := e.c.EnqueueBulk(ctx(t), nil, []fenced.EnqueueParams{{Kind: "bulk", Metadata: meta(4)}, {Kind: "bulk"}})
		wantNoErr(t, err, "enqueue bulk")
		n2, err := e.c.EnqueueBulk(ctx(t), nil, []fenced.EnqueueParams{{Kind: "later", Metadata: meta(5), Delay: time.Millisecond}})
		wantNoErr(t, err, "enqueue bulk with a delay")
		if n+n2 != 3 {
			t.Fatalf("bulk enqueued %d jobs, want 3", n+n2)
		}
		jobs, err := e.c.ListJobs(ctx(t), fenced.JobFilter{})
		wantNoErr(t, err, "list")
		want := []json.RawMessage{meta(1), json.RawMessage(`{"tenant":"42"}`), nil, meta(2), nil, meta(3), meta(4), nil, meta(5)}
		if len(jobs) != len(want) {
			t.Fatalf("%d jobs, want %d", len(jobs), len(want))
		}
		for i, j := range jobs {
			if want[i] == nil {
				if j.Metadata != nil {
					t.Fatalf("listed job %d has metadata %s, want none", j.ID, j.Metadata)
				}
				continue
			}
			wantMetadata(t, "listed job", j.Metadata, want[i])
			got, _, err := e.c.GetJob(ctx(t), j.ID)
			wantNoErr(t, err, "get job")
			wantMetadata(t, "GetJob", got.Metadata, want[i])
		}
		// The claim hands each attempt its job's metadata.
		time.Sleep(5 * time.Millisecond) // the delayed job's millisecond
		claimed := e.claim(t, fenced.DefaultQueue, "w", 100, long)
		if len(claimed) != len(want) {
			t.Fatalf("claimed %d jobs, want %d", len(claimed), len(want))
		}
		for _, j := range claimed {
			for _, l := range jobs {
				if l.ID == j.ID && !reflect.DeepEqual(decodeMeta(t, j.Metadata), decodeMeta(t, l.Metadata)) {
					t.Fatalf("claimed job %d has metadata %s, stored %s", j.ID, j.Metadata, l.Metadata)
				}
			}
		}
	})
	t.Run("RefusesWhatIsNotAnObject", func(t *testing.T) {
		t.Parallel()
		e := setup(t, b)
		for name, m := range map[string]any{
			"an array":          json.RawMessage(`[1]`),
			"a string":          "traceparent",
			"a duplicate key":   json.RawMessage(`{"a":1,"a":2}`),
			"invalid JSON":      json.RawMessage(`{"a":`),
			"too large":         map[string]string{"a": strings.Repeat("x", fenced.MaxMetadataBytes)},
			"a NUL escape":      json.RawMessage(`{"a":"\u0000"}`),
			"a nested dup key":  json.RawMessage(`{"a":{"b":1,"b":1}}`),
			"a number too wide": json.RawMessage(`{"a":1e999}`),
		} {
			_, _, err := e.c.Enqueue(ctx(t), fenced.EnqueueParams{Kind: "k", Metadata: m})
			var inv *fenced.InvalidError
			if !errors.As(err, &inv) || inv.Field != "metadata" {
				t.Errorf("metadata %s: %v, want an *InvalidError of metadata", name, err)
			}
			_, err = e.c.EnqueueBulk(ctx(t), nil, []fenced.EnqueueParams{{Kind: "k"}, {Kind: "k", Metadata: m}})
			if !errors.As(err, &inv) {
				t.Errorf("bulk metadata %s: %v, want an *InvalidError", name, err)
			}
		}
		jobs, err := e.c.ListJobs(ctx(t), fenced.JobFilter{})
		wantNoErr(t, err, "list")
		if len(jobs) != 0 {
			t.Fatalf("%d jobs written by refused enqueues", len(jobs))
		}
	})
}

// wantMetadata fails unless got is the JSON object want (compared as
// values: a backend may store JSON reformatted).
func wantMetadata(t *testing.T, what string, got, want json.RawMessage) {
	t.Helper()
	if !reflect.DeepEqual(decodeMeta(t, got), decodeMeta(t, want)) {
		t.Fatalf("%s: metadata %s, want %s", what, got, want)
	}
}

func decodeMeta(t *testing.T, b json.RawMessage) map[string]any {
	t.Helper()
	if b == nil {
		return nil
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatalf("metadata %s: %v", b, err)
	}
	return m
}
