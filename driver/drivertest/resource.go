package drivertest

import (
	"testing"
	"time"

	"github.com/fenced/fenced"
)

// writeResource writes value under key with fence and operation id op.
func writeResource(t *testing.T, e *env, key, value string, fence int64, op string) (*fenced.ResourceWrite, error) {
	return e.c.WriteResource(ctx(t), key, []byte(value), fence, fenced.WriteOptions{OperationID: op})
}

// readResource reads key, which must exist.
func readResource(t *testing.T, e *env, key string) *fenced.Resource {
	t.Helper()
	r, err := e.c.ReadResource(ctx(t), key)
	wantNoErr(t, err, "read resource")
	return r
}

// runWriteResource: a write is accepted iff its fence is at least the
// stored one, and an operation id replays the first outcome (docs/design.md §5.2).
func runWriteResource(t *testing.T, b Backend) {
	t.Run("FirstWriteIsVersionOne", func(t *testing.T) {
		t.Parallel()
		e := setup(t, b)
		w, err := writeResource(t, e, "k", "v1", 3, "")
		wantNoErr(t, err, "write")
		if w.Version != 1 || w.Fence != 3 || w.Replayed {
			t.Fatalf("write = %+v", w)
		}
		r := readResource(t, e, "k")
		if string(r.Value) != "v1" || r.Fence != 3 || r.Version != 1 {
			t.Fatalf("read = %+v", r)
		}
	})
	t.Run("EqualOrHigherFenceIsAccepted", func(t *testing.T) {
		t.Parallel()
		e := setup(t, b)
		for i, f := range []int64{1, 1, 2, 7} {
			w, err := writeResource(t, e, "k", "v", f, "")
			wantNoErr(t, err, "write")
			if w.Version != int64(i+1) || w.Fence != f {
				t.Fatalf("write %d = %+v", i, w)
			}
		}
	})
	t.Run("LowerFenceIsStaleAndChangesNothing", func(t *testing.T) {
		t.Parallel()
		e := setup(t, b)
		_, err := writeResource(t, e, "k", "eight", 2, "")
		wantNoErr(t, err, "write")
		_, err = writeResource(t, e, "k", "five", 1, "")
		wantStale(t, err, 1, 2, "", fenced.ReasonSuperseded)
		r := readResource(t, e, "k")
		if string(r.Value) != "eight" || r.Fence != 2 || r.Version != 1 {
			t.Fatalf("read after stale write = %+v", r)
		}
	})
	t.Run("StaleHolderWriteAfterTakeoverIsRejected", func(t *testing.T) {
		t.Parallel()
		e := setup(t, b)
		a := e.acquire(t, "job", "A", b.ttl(50*time.Millisecond))
		e.waitExpired(t, "job")
		bl := e.acquire(t, "job", "B", long)
		_, err := writeResource(t, e, "out", "8", bl.Fence, "")
		wantNoErr(t, err, "B writes")
		_, err = writeResource(t, e, "out", "5", a.Fence, "")
		wantStale(t, err, a.Fence, bl.Fence, "", fenced.ReasonSuperseded)
		if r := readResource(t, e, "out"); string(r.Value) != "8" {
			t.Fatalf("value = %s, want 8", r.Value)
		}
	})
	t.Run("OperationIDReturnsFirstResult", func(t *testing.T) {
		t.Parallel()
		e := setup(t, b)
		first, err := writeResource(t, e, "k", "v1", 1, "op-1")
		wantNoErr(t, err, "first write")
		again, err := writeResource(t, e, "k", "v1", 1, "op-1")
		wantNoErr(t, err, "repeat write")
		if !again.Replayed || again.Version != first.Version || again.Fence != first.Fence {
			t.Fatalf("repeat = %+v, first = %+v", again, first)
		}
		if r := readResource(t, e, "k"); string(r.Value) != "v1" || r.Version != 1 {
			t.Fatalf("repeat was applied: %+v", r)
		}
		next, err := writeResource(t, e, "k", "v2", 1, "op-2")
		wantNoErr(t, err, "new op")
		if next.Replayed || next.Version != 2 {
			t.Fatalf("new op = %+v", next)
		}
	})
	t.Run("OperationIDReturnsFirstStaleResult", func(t *testing.T) {
		t.Parallel()
		e := setup(t, b)
		_, err := writeResource(t, e, "k", "v", 5, "")
		wantNoErr(t, err, "write")
		_, err = writeResource(t, e, "k", "old", 4, "op-x")
		wantStale(t, err, 4, 5, "", fenced.ReasonSuperseded)
		_, err = writeResource(t, e, "k", "v9", 9, "")
		wantNoErr(t, err, "write 9")
		_, err = writeResource(t, e, "k", "old", 4, "op-x")
		wantStale(t, err, 4, 5, "", fenced.ReasonSuperseded) // the first outcome, recorded
	})
	t.Run("OperationIDReusedForAnotherWriteIsInvalid", func(t *testing.T) {
		t.Parallel()
		e := setup(t, b)
		_, err := writeResource(t, e, "k", "v1", 1, "op-1")
		wantNoErr(t, err, "first write")
		_, err = writeResource(t, e, "k", "v2", 1, "op-1") // another value
		wantErrIs(t, err, fenced.ErrInvalid)
		_, err = writeResource(t, e, "k", "v1", 2, "op-1") // another fence
		wantErrIs(t, err, fenced.ErrInvalid)
		if r := readResource(t, e, "k"); string(r.Value) != "v1" || r.Fence != 1 || r.Version != 1 {
			t.Fatalf("a refused repeat changed the resource: %+v", r)
		}
		again, err := writeResource(t, e, "k", "v1", 1, "op-1") // the true repeat still replays
		wantNoErr(t, err, "repeat")
		if !again.Replayed || again.Version != 1 {
			t.Fatalf("repeat = %+v", again)
		}
	})
	t.Run("OperationIDsAreScopedByKey", func(t *testing.T) {
		t.Parallel()
		e := setup(t, b)
		_, err := writeResource(t, e, "k1", "a", 1, "op")
		wantNoErr(t, err, "k1")
		w, err := writeResource(t, e, "k2", "b", 1, "op")
		wantNoErr(t, err, "k2")
		if w.Replayed {
			t.Fatal("op id leaked across keys")
		}
	})
}

// runReadResource: a read returns the bytes stored, or not found.
func runReadResource(t *testing.T, b Backend) {
	t.Run("MissingKeyIsNotFound", func(t *testing.T) {
		t.Parallel()
		e := setup(t, b)
		_, err := e.c.ReadResource(ctx(t), "nope")
		wantErrIs(t, err, fenced.ErrNotFound)
	})
	t.Run("BinaryAndEmptyValuesRoundTrip", func(t *testing.T) {
		t.Parallel()
		e := setup(t, b)
		bin := []byte{0, 1, 2, 0xff, 0}
		_, err := e.c.WriteResource(ctx(t), "bin", bin, 1, fenced.WriteOptions{})
		wantNoErr(t, err, "write")
		if r := readResource(t, e, "bin"); string(r.Value) != string(bin) {
			t.Fatalf("value = %v", r.Value)
		}
		_, err = e.c.WriteResource(ctx(t), "empty", nil, 1, fenced.WriteOptions{})
		wantNoErr(t, err, "write empty")
		if r := readResource(t, e, "empty"); len(r.Value) != 0 {
			t.Fatalf("value = %v", r.Value)
		}
	})
}
