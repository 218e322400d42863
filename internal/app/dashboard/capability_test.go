package dashboard_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/fenced/fenced"
	"github.com/fenced/fenced/driver"
	"github.com/fenced/fenced/internal/app/dashboard"
	"github.com/fenced/fenced/internal/test/testdb"
)

// coreOnly is a backend of the core contract alone (driver.Driver), as
// etcd is: no job queue, no semaphores, no clock read.
type coreOnly struct{ driver.Driver }

// On a backend without the job queue the overview shows the leases, the
// charts page says there are no jobs, and every job page
// and action answers 501 with the Client's error for the job queue.
func TestABackendWithoutJobsShowsLeasesAndNoJobPages(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	d, err := fenced.OpenDriver(ctx, testdb.SQLite(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
	if _, err := fenced.New(d, fenced.Config{}).Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	c := fenced.New(coreOnly{d}, fenced.Config{})
	if _, err := c.AcquireLease(ctx, "report", "w1", time.Minute); err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(dashboard.New(c, nil, dashboard.Options{}))
	t.Cleanup(ts.Close)

	status, _, body := get(t, ts.URL+"/")
	if status != http.StatusOK || !strings.Contains(body, "report") || !strings.Contains(body, "w1") {
		t.Fatalf("overview without jobs = %d:\n%s", status, body)
	}
	if status, _, body := get(t, ts.URL+"/charts"); status != http.StatusOK || !strings.Contains(body, "This backend keeps no jobs.") {
		t.Fatalf("charts without jobs = %d:\n%s", status, body)
	}
	want := c.Unsupported(fenced.CapJobs).Error()
	for _, path := range []string{"/jobs", "/jobs?queue=q", "/jobs/1", "/confirm?action=retry&id=1"} {
		status, _, body := get(t, ts.URL+path)
		if status != http.StatusNotImplemented || !strings.Contains(body, "No job queue") || !strings.Contains(body, want) {
			t.Errorf("GET %s without jobs = %d:\n%s", path, status, body)
		}
	}
}
