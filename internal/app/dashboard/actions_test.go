package dashboard_test

import (
	"context"
	"fmt"
	"log/slog"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/fenced/fenced/internal/test/logbuf"

	"github.com/fenced/fenced"
	"github.com/fenced/fenced/internal/app/dashboard"
)

// failedJob enqueues a job of kind and fails its only attempt.
func (e *env) failedJob(kind string) *fenced.Job {
	e.t.Helper()
	ctx := context.Background()
	j, _, err := e.c.Enqueue(ctx, fenced.EnqueueParams{Kind: kind, Queue: "q-" + kind, MaxAttempts: 1})
	if err != nil {
		e.t.Fatal(err)
	}
	got, err := e.c.ClaimJobs(ctx, "q-"+kind, "worker-1", 1, time.Minute)
	if err != nil || len(got) != 1 {
		e.t.Fatalf("claim: %v %v", got, err)
	}
	if err := e.c.FailJob(ctx, got[0].Ref(), "boom <b>", 0, false); err != nil {
		e.t.Fatal(err)
	}
	return j
}

// TestJobBrowserKeysetPages: paging older then newer through a kind's jobs
// shows each job once, in id order, with jobs enqueued between pages.
func TestJobBrowserKeysetPages(t *testing.T) {
	t.Parallel()
	e := setup(t)
	ctx := context.Background()
	var ps []fenced.EnqueueParams
	for i := range 130 {
		ps = append(ps, fenced.EnqueueParams{Kind: []string{"k", "other"}[i%5/4], Queue: "q"})
	}
	res, err := e.c.EnqueueMany(ctx, nil, ps)
	if err != nil {
		t.Fatal(err)
	}
	var want []int64 // of kind k, newest first
	for i := len(res) - 1; i >= 0; i-- {
		if res[i].Job.Kind == "k" {
			want = append(want, res[i].Job.ID)
		}
	}
	p := newPerson(t, e.url)
	var got []int64
	var pages []string
	path := "/jobs?kind=k"
	for n := 0; path != ""; n++ {
		pg := p.get(path)
		if pg.status != 200 {
			t.Fatalf("GET %s = %d:\n%s", path, pg.status, pg.body)
		}
		pages = append(pages, path)
		for _, m := range jobLink.FindAllStringSubmatch(pg.body, -1) {
			id, _ := strconv.ParseInt(m[1], 10, 64)
			got = append(got, id)
		}
		// A job enqueued meanwhile goes on the first page, not this one.
		if _, _, err := e.c.Enqueue(ctx, fenced.EnqueueParams{Kind: "k", Queue: "q"}); err != nil {
			t.Fatal(err)
		}
		path = ""
		for _, m := range pagerLink.FindAllStringSubmatch(pg.body, -1) {
			if m[2] == "next" {
				path = "/jobs?" + htmlUnescape(m[1])
			}
		}
		if n > 10 {
			t.Fatal("no last page")
		}
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("paged %d jobs %v\nwant %d %v", len(got), got, len(want), want)
	}
	if len(pages) != 3 {
		t.Fatalf("%d pages of 50 for %d jobs: %v", len(pages), len(want), pages)
	}
	// Back from the last page: Newer shows the second page again.
	last := p.get(pages[2])
	var newer string
	for _, m := range pagerLink.FindAllStringSubmatch(last.body, -1) {
		if m[2] == "prev" {
			newer = "/jobs?" + htmlUnescape(m[1])
		}
	}
	second := jobLink.FindAllStringSubmatch(p.get(newer).body, -1)
	if len(second) != 50 || second[0][1] != strconv.FormatInt(want[50], 10) {
		t.Fatalf("newer than the last page (%s): %d jobs from #%s, want 50 from #%d", newer, len(second), second[0][1], want[50])
	}

	if pg := p.get("/jobs?id=" + strconv.FormatInt(want[0], 10)); pg.status != 303 || pg.location != "/jobs/"+strconv.FormatInt(want[0], 10) {
		t.Fatalf("search by id = %d %s", pg.status, pg.location)
	}
	for _, bad := range []string{"/jobs?queue=no%20spaces", "/jobs?state=lost", "/jobs?before=x", "/jobs?id=-3"} {
		if pg := p.get(bad); pg.status != 400 {
			t.Errorf("GET %s = %d, want 400", bad, pg.status)
		}
	}
}

// TestActionRefusedWithoutCSRF: a POST without the session's token, with a
// wrong one, without a session, or from another site changes nothing.
func TestActionRefusedWithoutCSRF(t *testing.T) {
	t.Parallel()
	e := setup(t)
	j := e.failedJob("csrf")
	p := newPerson(t, e.url)
	c := p.get(fmt.Sprintf("/confirm?action=retry&job=%d", j.ID))
	good := form(t, c.body)
	for name, tc := range map[string]struct {
		who     *person
		edit    func(url.Values)
		headers []string
	}{
		"Missing":     {p, func(v url.Values) { v.Del("csrf") }, nil},
		"Wrong":       {p, func(v url.Values) { v.Set("csrf", strings.Repeat("A", 43)) }, nil},
		"NoSession":   {newPerson(t, e.url), func(url.Values) {}, nil},
		"CrossSite":   {p, func(url.Values) {}, []string{"Sec-Fetch-Site", "cross-site"}},
		"OtherOrigin": {p, func(url.Values) {}, []string{"Sec-Fetch-Site", "", "Origin", "https://evil.example"}},
	} {
		t.Run(name, func(t *testing.T) {
			v := url.Values{}
			for k, vs := range good {
				v[k] = append([]string(nil), vs...)
			}
			tc.edit(v)
			if pg := tc.who.post("/act", v, tc.headers...); pg.status != 403 {
				t.Fatalf("POST /act = %d, want 403:\n%s", pg.status, pg.body)
			}
		})
	}
	if got, _, _ := e.c.GetJob(context.Background(), j.ID); got.State != fenced.JobFailed {
		t.Fatalf("a refused action changed the job: %s", got.State)
	}
	if pg := p.post("/logout", url.Values{"csrf": {"wrong"}}); pg.status != 403 {
		t.Fatalf("logout with a wrong token = %d", pg.status)
	}
}

// TestRetryCancelDeleteOneJob: each action is confirmed on a page, done by
// its form, logged, and refused (409) in a state it does not apply to.
func TestRetryCancelDeleteOneJob(t *testing.T) {
	t.Parallel()
	var log logbuf.Buffer
	e := setupWith(t, nil, dashboard.Options{Logger: slog.New(slog.NewTextHandler(&log, nil))})
	ctx := context.Background()
	j := e.failedJob("one")
	p := newPerson(t, e.url)

	if pg := p.get(fmt.Sprintf("/jobs/%d", j.ID)); !strings.Contains(pg.body, fmt.Sprintf(`href="/confirm?action=retry&amp;job=%d"`, j.ID)) ||
		strings.Contains(pg.body, "action=cancel") {
		t.Fatalf("a failed job's page should offer retry and not cancel:\n%s", pg.body)
	}
	c := p.get(fmt.Sprintf("/confirm?action=retry&job=%d", j.ID))
	if got, _, _ := e.c.GetJob(ctx, j.ID); got.State != fenced.JobFailed || !strings.Contains(c.body, "Retry job #") {
		t.Fatalf("the confirmation page changed the job or does not ask: %s\n%s", got.State, c.body)
	}
	if pg := p.post("/act", form(t, c.body)); pg.status != 200 || !strings.Contains(pg.body, "1 job retried") {
		t.Fatalf("retry = %d:\n%s", pg.status, pg.body)
	}
	if got, _, _ := e.c.GetJob(ctx, j.ID); got.State != fenced.JobQueued {
		t.Fatalf("after retry: %s", got.State)
	}
	if pg := p.confirm(fmt.Sprintf("action=retry&job=%d", j.ID)); pg.status != 409 || !strings.Contains(pg.body, "is queued") {
		t.Fatalf("retry of a queued job = %d:\n%s", pg.status, pg.body)
	}
	if pg := p.confirm(fmt.Sprintf("action=cancel&job=%d", j.ID)); pg.status != 200 {
		t.Fatalf("cancel = %d:\n%s", pg.status, pg.body)
	}
	if got, _, _ := e.c.GetJob(ctx, j.ID); got.State != fenced.JobCancelled {
		t.Fatalf("after cancel: %s", got.State)
	}
	if pg := p.confirm(fmt.Sprintf("action=delete&job=%d", j.ID)); pg.status != 200 || !strings.Contains(pg.body, `href="/jobs"`) {
		t.Fatalf("delete = %d:\n%s", pg.status, pg.body)
	}
	if _, _, err := e.c.GetJob(ctx, j.ID); err == nil {
		t.Fatal("the job is still there after delete")
	}
	if pg := p.get(fmt.Sprintf("/confirm?action=delete&job=%d", j.ID)); pg.status != 404 {
		t.Fatalf("confirming on a deleted job = %d", pg.status)
	}
	if pg := p.get("/confirm?action=explode&job=1"); pg.status != 400 {
		t.Fatalf("an unknown action = %d", pg.status)
	}
	for _, want := range []string{"action=retry", "action=cancel", "action=delete", fmt.Sprintf("job=%d", j.ID), "done=1"} {
		if !strings.Contains(log.String(), want) {
			t.Errorf("the log lacks %q:\n%s", want, log.String())
		}
	}
}

// TestBulkActionIsBounded: an action on a filter changes at most 1000
// jobs, the newest, in the states it applies to, and says so.
func TestBulkActionIsBounded(t *testing.T) {
	t.Parallel()
	var log logbuf.Buffer
	e := setupWith(t, nil, dashboard.Options{Logger: slog.New(slog.NewTextHandler(&log, nil))})
	ctx := context.Background()
	var ps []fenced.EnqueueParams
	for range 1005 {
		ps = append(ps, fenced.EnqueueParams{Kind: "bulk", Queue: "bulk", Delay: time.Hour})
	}
	if _, err := e.c.EnqueueMany(ctx, nil, ps); err != nil {
		t.Fatal(err)
	}
	other := e.failedJob("bulk") // another queue: outside the filter
	p := newPerson(t, e.url)
	list := p.get("/jobs?queue=bulk")
	if !strings.Contains(list.body, "at most 1000 jobs") || !strings.Contains(list.body, `href="/confirm?action=cancel&amp;queue=bulk"`) {
		t.Fatalf("the list does not offer a bounded bulk cancel:\n%s", list.body)
	}
	c := p.get("/confirm?action=cancel&queue=bulk")
	if !strings.Contains(c.body, "Cancel 1000 jobs?") || !strings.Contains(c.body, "at most 1000 per action") {
		t.Fatalf("the confirmation does not say 1000 and the bound:\n%s", c.body)
	}
	if pg := p.post("/act", form(t, c.body)); pg.status != 200 || !strings.Contains(pg.body, "1000 jobs cancelled") {
		t.Fatalf("bulk cancel = %d:\n%s", pg.status, pg.body)
	}
	left, err := e.c.ListJobs(ctx, fenced.JobFilter{Queue: "bulk", State: fenced.JobQueued})
	if err != nil || len(left) != 5 {
		t.Fatalf("%d left queued, want the 5 oldest: %v", len(left), err)
	}
	if got, _, _ := e.c.GetJob(ctx, other.ID); got.State != fenced.JobFailed {
		t.Fatal("a job outside the filter was changed")
	}
	// Retry applies to failed and cancelled jobs only: a retry of the
	// queue's jobs takes the 1000 cancelled ones, not the 5 queued.
	if pg := p.confirm("action=retry&queue=bulk"); !strings.Contains(pg.body, "1000 jobs retried") {
		t.Fatalf("bulk retry:\n%s", pg.body)
	}
	if !strings.Contains(log.String(), `filter="queue=bulk" matched=1000`) {
		t.Errorf("the log does not name the filter:\n%s", log.String())
	}
}
