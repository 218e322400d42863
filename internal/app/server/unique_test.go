package server

import (
	"net/http"
	"testing"

	"github.com/fenced/fenced"
)

// TestUniqueJobs: POST /v1/jobs with "unique" returns the job holding the
// slot (200, existing true), refuses bad options as invalid naming the
// field, and a retry that would collide is 409 unique_conflict naming the
// holder.
func TestUniqueJobs(t *testing.T) {
	t.Parallel()
	eachDB(t, func(t *testing.T, db newDB) {
		t.Run("EnqueueAndRetry", func(t *testing.T) {
			t.Parallel()
			e := setup(t, db(t), Config{})
			body := func(n int) map[string]any {
				return map[string]any{"kind": "sync", "queue": "u", "args": map[string]any{"user": 7, "n": n},
					"unique": map[string]any{"args_keys": []string{"user"}, "by_period_ms": 3_600_000, "by_queue": true,
						"by_state": []string{"queued", "running"}}}
			}
			first := e.enqueue(body(1))
			var again jobOut
			e.decode(e.ok("POST", "/v1/jobs", body(2), http.StatusOK), &again)
			if first.Existing || !again.Existing || again.ID != first.ID {
				t.Fatalf("unique twice: %+v then %+v", first, again)
			}
			c := e.claim("u", map[string]any{"owner": "w"})[0]
			e.ok("POST", jobPath(first.ID, "fail"), map[string]any{"fence": c.Fence, "error": "boom", "discard": true})
			newer := e.enqueue(body(3))
			if newer.ID == first.ID {
				t.Fatalf("a failed job held its slot")
			}
			r := e.fails(http.StatusConflict, codeUniqueConflict, "POST", jobPath(first.ID, "retry"), nil)
			if r.body["op"] != "retry" || r.body["id"] != float64(first.ID) || r.body["existing_id"] != float64(newer.ID) {
				t.Fatalf("colliding retry = %s", r.raw)
			}
			if h := e.job(first.ID); h.Job.State != fenced.JobFailed {
				t.Fatalf("the refused retry left the job %s", h.Job.State)
			}
			// By kind alone: {}.
			k := e.enqueue(map[string]any{"kind": "tidy", "unique": map[string]any{}})
			var k2 jobOut
			e.decode(e.ok("POST", "/v1/jobs", map[string]any{"kind": "tidy", "args": []int{1}, "unique": map[string]any{}}, http.StatusOK), &k2)
			if !k2.Existing || k2.ID != k.ID {
				t.Fatalf("unique by kind: %+v then %+v", k, k2)
			}
		})
		t.Run("InvalidOptions", func(t *testing.T) {
			t.Parallel()
			e := setup(t, db(t), Config{})
			for field, u := range map[string]any{
				"unique.by_period_ms": map[string]any{"by_period_ms": 500},
				"unique.by_state":     map[string]any{"by_state": []string{"queued"}},
				"unique.args_keys":    map[string]any{"args_keys": []string{"a", "a"}},
			} {
				r := e.fails(http.StatusBadRequest, codeInvalid, "POST", "/v1/jobs", map[string]any{"kind": "k", "unique": u})
				if r.body["field"] != field {
					t.Errorf("%v: field %v, want %s (%s)", u, r.body["field"], field, r.raw)
				}
			}
			e.fails(http.StatusBadRequest, codeInvalid, "POST", "/v1/jobs", map[string]any{"kind": "k", "unique": map[string]any{"by": 1}})
			e.fails(http.StatusBadRequest, codeInvalid, "POST", "/v1/jobs", map[string]any{"kind": "k", "unique": map[string]any{"by_state": []string{"queued", "running", "done"}}})
		})
	})
}
