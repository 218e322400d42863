package server

import (
	"net/http"
	"testing"
)

// TestJobListQueryIsParsedStrictly: a list whose query cannot be parsed,
// or gives a filter with no value, is refused; it must not quietly drop
// the filter and list every job.
func TestJobListQueryIsParsedStrictly(t *testing.T) {
	t.Parallel()
	eachDB(t, func(t *testing.T, db newDB) {
		e := setup(t, db(t), Config{})
		e.ok("POST", "/v1/jobs", `{"kind": "k"}`, http.StatusCreated) // queued, not failed
		for _, c := range []struct{ query, field string }{
			{"state=%zz", "query"},
			{"state=failed;x=1", "query"},
			{"state=failed&limit=%", "query"},
			{"state=", "state"},
			{"queue=", "queue"},
			{"kind=", "kind"},
		} {
			r := e.fails(http.StatusBadRequest, codeInvalid, "GET", "/v1/jobs?"+c.query, nil)
			if r.body["field"] != c.field {
				t.Fatalf("?%s: field %v, want %q: %s", c.query, r.body["field"], c.field, r.raw)
			}
		}
		var page struct {
			Jobs []any `json:"jobs"`
		}
		if e.decode(e.ok("GET", "/v1/jobs?state=failed", nil), &page); len(page.Jobs) != 0 {
			t.Fatalf("state=failed lists %d jobs", len(page.Jobs))
		}
	})
}
