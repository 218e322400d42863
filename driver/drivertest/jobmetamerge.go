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

// mergeCases are RFC 7396's examples (its appendix A) whose target and
// patch are objects, as a job's metadata and a merge's patch are, and a
// few more; want is the merged object. A nil target is a job without
// metadata.
var mergeCases = []struct{ target, patch, want string }{
	{`{"a":"b"}`, `{"a":"c"}`, `{"a":"c"}`},
	{`{"a":"b"}`, `{"b":"c"}`, `{"a":"b","b":"c"}`},
	{`{"a":"b"}`, `{"a":null}`, `{}`},
	{`{"a":"b","b":"c"}`, `{"a":null}`, `{"b":"c"}`},
	{`{"a":["b"]}`, `{"a":"c"}`, `{"a":"c"}`},
	{`{"a":"c"}`, `{"a":["b"]}`, `{"a":["b"]}`},
	{`{"a":{"b":"c"}}`, `{"a":{"b":"d","c":null}}`, `{"a":{"b":"d"}}`},
	{`{"a":[{"b":"c"}]}`, `{"a":[1]}`, `{"a":[1]}`},
	{`{"e":null}`, `{"a":1}`, `{"e":null,"a":1}`},
	{`{}`, `{"a":{"bb":{"ccc":null}}}`, `{"a":{"bb":{}}}`},
	// A job without metadata starts from {}; a null in an array stays.
	{``, `{"a":1,"b":null,"c":[null]}`, `{"a":1,"c":[null]}`},
	// Nested objects merge key by key; a scalar over an object replaces it.
	{`{"a":{"x":1,"y":{"z":2}},"k":{"o":1}}`, `{"a":{"y":{"w":3},"n":{"m":null}},"k":5}`,
		`{"a":{"x":1,"y":{"z":2,"w":3},"n":{}},"k":5}`},
	{`{"a":1}`, `{}`, `{"a":1}`},
}

// runJobMetadataMerge: a running attempt merges a JSON Merge Patch (RFC
// 7396) into its job's metadata in one guarded statement; a stale
// attempt's merge, or one after the job finished, is refused with a
// *StaleError and changes nothing; a merged object over the bound is
// refused with an *InvalidError and changes nothing (docs/design.md §6.2).
func runJobMetadataMerge(t *testing.T, b Backend) {
	t.Run("RFC7396", func(t *testing.T) {
		t.Parallel()
		e := setup(t, b)
		for _, c := range mergeCases {
			p := fenced.EnqueueParams{Kind: "k"}
			if c.target != "" {
				p.Metadata = json.RawMessage(c.target)
			}
			e.enqueue(t, p)
		}
		claimed := e.claim(t, fenced.DefaultQueue, "A", len(mergeCases), long)
		if len(claimed) != len(mergeCases) {
			t.Fatalf("claimed %d jobs, want %d", len(claimed), len(mergeCases))
		}
		for i, c := range mergeCases {
			a := claimed[i]
			merged, _, err := e.c.MergeJobMetadata(ctx(t), a.Ref(), json.RawMessage(c.patch))
			wantNoErr(t, err, "merge "+c.patch)
			if !reflect.DeepEqual(decodeMeta(t, merged), decodeMeta(t, json.RawMessage(c.want))) {
				t.Errorf("%s merged with %s = %s, want %s", c.target, c.patch, merged, c.want)
			}
			got, _ := e.job(t, a.ID)
			if !reflect.DeepEqual(decodeMeta(t, got.Metadata), decodeMeta(t, json.RawMessage(c.want))) {
				t.Errorf("%s merged with %s: stored %s, want %s", c.target, c.patch, got.Metadata, c.want)
			}
		}
	})
	t.Run("StaleAttemptIsRefusedAndChangesNothing", func(t *testing.T) {
		t.Parallel()
		e := setup(t, b)
		j := e.enqueue(t, fenced.EnqueueParams{Kind: "k", Metadata: map[string]int{"n": 1}})
		a := e.claimOne(t, "A", 2*time.Second)
		merged, _, err := e.c.MergeJobMetadata(ctx(t), a.Ref(), map[string]string{"by": "A"})
		wantNoErr(t, err, "A's merge while current")
		wantMetadata(t, "A's merge", merged, json.RawMessage(`{"n":1,"by":"A"}`))
		e.waitJobExpired(t, j.ID)
		e.recoverExpired(t, j.ID)
		bj := e.claimOne(t, "B", long)
		_, _, err = e.c.MergeJobMetadata(ctx(t), a.Ref(), map[string]any{"by": "A again", "n": nil})
		wantStale(t, err, a.Fence, bj.Fence, "B", fenced.ReasonSuperseded)
		got, _ := e.job(t, j.ID)
		wantMetadata(t, "after A's stale merge", got.Metadata, json.RawMessage(`{"n":1,"by":"A"}`))
		merged, _, err = e.c.MergeJobMetadata(ctx(t), bj.Ref(), map[string]any{"by": "B", "n": nil})
		wantNoErr(t, err, "B's merge")
		wantMetadata(t, "B's merge", merged, json.RawMessage(`{"by":"B"}`))
		// A forged fence above the job's was never granted.
		forged := bj.Ref()
		forged.Fence += 5
		_, _, err = e.c.MergeJobMetadata(ctx(t), forged, map[string]int{"x": 1})
		wantStale(t, err, forged.Fence, bj.Fence, "B", fenced.ReasonNeverGranted)
		// After the job finished, its last attempt's merge is refused.
		wantNoErr(t, e.c.CompleteJob(ctx(t), bj.Ref(), nil), "complete")
		_, _, err = e.c.MergeJobMetadata(ctx(t), bj.Ref(), map[string]int{"late": 1})
		wantStale(t, err, bj.Fence, bj.Fence, "", fenced.ReasonNotRunning)
		got, _ = e.job(t, j.ID)
		wantMetadata(t, "after the late merge", got.Metadata, json.RawMessage(`{"by":"B"}`))
		_, _, err = e.c.MergeJobMetadata(ctx(t), fenced.JobRef{ID: j.ID + 1000, Fence: 1}, map[string]int{"x": 1})
		wantErrIs(t, err, fenced.ErrNotFound)
	})
	t.Run("ExpiredLeaseIsRefused", func(t *testing.T) {
		t.Parallel()
		e := setup(t, b)
		j := e.enqueue(t, fenced.EnqueueParams{Kind: "k"})
		a := e.claimOne(t, "A", 30*time.Millisecond)
		e.waitJobExpired(t, j.ID)
		_, _, err := e.c.MergeJobMetadata(ctx(t), a.Ref(), map[string]int{"x": 1})
		wantStale(t, err, a.Fence, a.Fence, "", fenced.ReasonExpired)
		got, _ := e.job(t, j.ID)
		if got.Metadata != nil {
			t.Fatalf("an expired attempt's merge stored %s", got.Metadata)
		}
	})
	t.Run("SizeBoundAndPatchChecks", func(t *testing.T) {
		t.Parallel()
		e := setup(t, b)
		big := strings.Repeat("x", fenced.MaxMetadataBytes/2)
		j := e.enqueue(t, fenced.EnqueueParams{Kind: "k", Metadata: map[string]string{"a": big}})
		a := e.claimOne(t, "A", long)
		_, _, err := e.c.MergeJobMetadata(ctx(t), a.Ref(), map[string]string{"b": big})
		var inv *fenced.InvalidError
		if !errors.As(err, &inv) || inv.Field != "metadata" || errors.Is(err, fenced.ErrStale) {
			t.Fatalf("a merge past the bound: %v, want an *InvalidError of metadata", err)
		}
		got, _ := e.job(t, j.ID)
		wantMetadata(t, "after the refused merge", got.Metadata, json.RawMessage(`{"a":"`+big+`"}`))
		// Replacing the large value keeps the merged object small.
		merged, _, err := e.c.MergeJobMetadata(ctx(t), a.Ref(), map[string]any{"a": nil, "b": big})
		wantNoErr(t, err, "a merge that replaces the large value")
		wantMetadata(t, "the replacing merge", merged, json.RawMessage(`{"b":"`+big+`"}`))
		for name, patch := range map[string]any{
			"no patch":        nil,
			"an array":        json.RawMessage(`[1]`),
			"a string":        "x",
			"null":            json.RawMessage(`null`),
			"a duplicate key": json.RawMessage(`{"a":1,"a":2}`),
			"invalid JSON":    json.RawMessage(`{"a":`),
			"a NUL escape":    json.RawMessage(`{"a":"\u0000"}`),
			"too large":       map[string]string{"a": strings.Repeat("x", fenced.MaxMetadataBytes)},
		} {
			_, _, err := e.c.MergeJobMetadata(ctx(t), a.Ref(), patch)
			if !errors.As(err, &inv) || inv.Field != "metadata" {
				t.Errorf("patch %s: %v, want an *InvalidError of metadata", name, err)
			}
		}
		got, _ = e.job(t, j.ID)
		wantMetadata(t, "after the refused patches", got.Metadata, json.RawMessage(`{"b":"`+big+`"}`))
	})
}
