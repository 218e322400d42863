package server

import (
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/fenced/fenced"
)

// A claim's "kinds" takes only jobs of those kinds; absent, null or empty it
// takes every kind; it is validated like every other field.
func TestClaimKinds(t *testing.T) {
	t.Parallel()
	eachDB(t, func(t *testing.T, db newDB) {
		t.Run("OnlyTheKindsAsked", func(t *testing.T) {
			t.Parallel()
			e := setup(t, db(t), Config{})
			// The other kinds are ahead in claim order.
			invoice := e.enqueue(map[string]any{"kind": "invoice", "args": map[string]any{}})
			slow := e.enqueue(map[string]any{"kind": "slow", "args": map[string]any{}})
			echo := e.enqueue(map[string]any{"kind": "echo", "args": map[string]any{"n": 1}, "priority": 3})
			got := e.claim("default", map[string]any{"owner": "py", "limit": 10, "kinds": []string{"echo"}})
			if len(got) != 1 || got[0].ID != echo.ID || got[0].Kind != "echo" || got[0].Fence != 1 {
				t.Fatalf("claim of kind echo = %+v, want job %d alone", got, echo.ID)
			}
			for _, id := range []int64{invoice.ID, slow.ID} {
				var h historyOut
				e.decode(e.ok("GET", fmt.Sprintf("/v1/jobs/%d", id), nil), &h)
				if h.Job.State != fenced.JobQueued || h.Job.Attempt != 0 || len(h.Attempts) != 0 {
					t.Fatalf("job %d of kind %s was touched: %+v %+v", id, h.Job.Kind, h.Job, h.Attempts)
				}
			}
			if got := e.claim("default", map[string]any{"owner": "py", "limit": 10, "kinds": []string{"echo", "other"}}); len(got) != 0 {
				t.Fatalf("claim of kinds echo and other took %+v", got)
			}
			// Two kinds; then null and [] mean every kind.
			e.enqueue(map[string]any{"kind": "mail", "args": map[string]any{}})
			got = e.claim("default", map[string]any{"owner": "w", "limit": 10, "kinds": []string{"slow", "invoice"}})
			if kinds := claimedKinds(got); !slices.Equal(kinds, []string{"invoice", "slow"}) {
				t.Fatalf("claim of kinds slow and invoice took kinds %v", kinds)
			}
			if got := e.claim("default", map[string]any{"owner": "w", "limit": 10, "kinds": nil}); len(got) != 1 || got[0].Kind != "mail" {
				t.Fatalf("claim with kinds null = %+v, want the mail job", got)
			}
			e.enqueue(map[string]any{"kind": "sms", "args": map[string]any{}})
			if got := e.claim("default", map[string]any{"owner": "w", "kinds": []string{}}); len(got) != 1 || got[0].Kind != "sms" {
				t.Fatalf("claim with kinds [] = %+v, want the sms job", got)
			}
		})
		t.Run("InvalidKindsAreRefused", func(t *testing.T) {
			t.Parallel()
			e := setup(t, db(t), Config{})
			j := e.enqueue(map[string]any{"kind": "echo", "args": map[string]any{}})
			tooMany := make([]string, fenced.MaxClaimKinds+1)
			for i := range tooMany {
				tooMany[i] = "echo"
			}
			for name, kinds := range map[string]any{
				"NotAList":    "echo",
				"NotStrings":  []any{"echo", 7},
				"Empty":       []string{"echo", ""},
				"ControlChar": []string{"a\tb"},
				"TooLong":     []string{strings.Repeat("k", fenced.MaxNameBytes+1)},
				"TooMany":     tooMany,
				"AnObject":    map[string]any{"echo": true},
			} {
				r := e.fails(http.StatusBadRequest, codeInvalid, "POST", "/v1/queues/default/claim",
					map[string]any{"owner": "w", "kinds": kinds})
				if r.body["field"] != "kinds" {
					t.Errorf("%s: field %v in %s, want kinds", name, r.body["field"], r.raw)
				}
			}
			// Nothing was claimed; the most kinds allowed are accepted.
			if got := e.claim("default", map[string]any{"owner": "w", "kinds": tooMany[1:]}); len(got) != 1 || got[0].ID != j.ID {
				t.Fatalf("claim with %d kinds = %+v, want job %d", fenced.MaxClaimKinds, got, j.ID)
			}
		})
		t.Run("AWaitingClaimSkipsOtherKinds", func(t *testing.T) {
			t.Parallel()
			e := setup(t, db(t), Config{PollEvery: 20 * time.Millisecond})
			ch := e.claimAsync("mail", map[string]any{"owner": "w", "wait_ms": 20000, "kinds": []string{"a"}})
			e.waitWaiting("mail")
			b := e.enqueue(map[string]any{"kind": "b", "queue": "mail", "args": map[string]any{}})
			a := e.enqueue(map[string]any{"kind": "a", "queue": "mail", "args": map[string]any{}})
			r := <-ch
			r.want(t, 1)
			var c claimOut
			e.decode(r.r, &c)
			if c.Jobs[0].ID != a.ID {
				t.Fatalf("the waiting claim of kind a took %+v, want job %d", c.Jobs[0], a.ID)
			}
			if got := e.claim("mail", map[string]any{"owner": "w2"}); len(got) != 1 || got[0].ID != b.ID || got[0].Fence != 1 {
				t.Fatalf("the job of kind b = %+v, want it still queued, never claimed", got)
			}
		})
	})
}

// claimedKinds is the sorted kinds of jobs.
func claimedKinds(jobs []fenced.Job) []string {
	var out []string
	for _, j := range jobs {
		out = append(out, j.Kind)
	}
	slices.Sort(out)
	return out
}
