package server

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/fenced/fenced"
)

// metric is the value of one series in a /metrics scrape, or -1.
func (e *env) metric(series string) float64 {
	e.t.Helper()
	r := e.ok("GET", "/metrics", nil)
	for _, line := range strings.Split(string(r.raw), "\n") {
		if i := strings.LastIndexByte(line, ' '); i > 0 && line[:i] == series {
			var v float64
			fmt.Sscan(line[i+1:], &v)
			return v
		}
	}
	return -1
}

func TestMetrics(t *testing.T) {
	t.Parallel()
	eachDB(t, func(t *testing.T, db newDB) {
		t.Run("CountsWhatTheServerDid", func(t *testing.T) {
			t.Parallel()
			e := setup(t, db(t), Config{})
			r := e.ok("GET", "/metrics", nil)
			e.wantDBTime(r, "metrics")
			if e.metric(`fenced_stale_writes_total{kind="resource",reason="superseded"}`) != 0 {
				t.Fatal("stale writes do not start at 0")
			}

			e.ok("POST", "/v1/leases/l/acquire", map[string]any{"owner": "A"})
			e.fails(http.StatusConflict, codeLeaseHeld, "POST", "/v1/leases/l/acquire", map[string]any{"owner": "B"})
			e.ok("PUT", "/v1/resources/r", map[string]any{"value": "v", "fence": 2})
			e.fails(http.StatusConflict, codeStaleFence, "PUT", "/v1/resources/r", map[string]any{"value": "v", "fence": 1})
			e.fails(http.StatusConflict, codeStaleFence, "POST", "/v1/leases/l/renew", map[string]any{"owner": "B", "fence": 1})
			for range 3 {
				e.enqueue(map[string]any{"kind": "k", "queue": "mail"})
			}
			e.enqueue(map[string]any{"kind": "k"})
			jobs := e.claim("mail", map[string]any{"owner": "w", "limit": 2})
			e.ok("POST", jobPath(jobs[0].ID, "complete"), map[string]any{"fence": jobs[0].Fence})
			e.ok("POST", jobPath(jobs[1].ID, "fail"), map[string]any{"fence": jobs[1].Fence, "error": "x", "discard": true})
			e.fails(http.StatusConflict, codeStaleFence, "POST", jobPath(jobs[0].ID, "complete"), map[string]any{"fence": jobs[0].Fence, "output": "another"})

			for series, want := range map[string]float64{
				`fenced_lease_acquires_total{result="acquired"}`:                                                1,
				`fenced_lease_acquires_total{result="held"}`:                                                    1,
				`fenced_stale_writes_total{kind="resource",reason="superseded"}`:                                1,
				`fenced_stale_writes_total{kind="lease",reason="wrong_owner"}`:                                  1,
				`fenced_stale_writes_total{kind="job",reason="not_running"}`:                                    1,
				`fenced_job_claims_total{queue="mail"}`:                                                         2,
				`fenced_job_completions_total`:                                                                  1,
				`fenced_job_failures_total`:                                                                     1,
				`fenced_jobs{queue="mail",state="queued"}`:                                                      1,
				`fenced_jobs{queue="mail",state="succeeded"}`:                                                   1,
				`fenced_jobs{queue="mail",state="failed"}`:                                                      1,
				`fenced_jobs{queue="mail",state="running"}`:                                                     0,
				`fenced_jobs{queue="default",state="queued"}`:                                                   1,
				`fenced_http_request_duration_seconds_count{code="201",route="POST /v1/jobs"}`:                  4,
				`fenced_http_request_duration_seconds_count{code="409",route="POST /v1/leases/{name}/acquire"}`: 1,
				`fenced_http_request_duration_seconds_count{code="200",route="POST /v1/queues/{queue}/claim"}`:  1,
			} {
				if got := e.metric(series); got != want {
					t.Errorf("%s = %v, want %v", series, got, want)
				}
			}
		})
		t.Run("CountsRecoveriesOfItsMaintenance", func(t *testing.T) {
			t.Parallel()
			e := setup(t, db(t), Config{Maintenance: &fenced.MaintenanceConfig{Every: 20 * time.Millisecond,
				Backoff: fenced.Backoff{Base: time.Hour, Max: time.Hour}}})
			j := e.enqueue(map[string]any{"kind": "k"})
			e.claimOne("w", 20)
			waitFor(t, "the maintenance to recover the job", func() bool {
				return e.metric("fenced_job_recoveries_total") == 1
			})
			if h := e.job(j.ID); h.Job.State != fenced.JobQueued || h.Attempts[0].Outcome != "lost" {
				t.Fatalf("recovered job = %+v", h)
			}
		})
	})
}
