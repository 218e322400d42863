package dashboard_test

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/fenced/fenced"
	"github.com/fenced/fenced/driver"
	"github.com/fenced/fenced/internal/app/dashboard"
	"github.com/fenced/fenced/internal/test/logbuf"
	"github.com/fenced/fenced/internal/test/testdb"
)

var (
	// taskBox is a task's box in the graph: job id, name, state and the
	// box's x (its layer's column).
	taskBox = regexp.MustCompile(`<a class="task" href="/jobs/(\d+)" data-task="([^"]+)" data-state="([^"]+)"><title>[^<]*</title><rect x="(\d+)"`)
	// edgePath is an edge of the graph, from a box to a box.
	edgePath = regexp.MustCompile(`<path class="edge" data-from="([^"]+)" data-to="([^"]+)"`)
	// taskRowLink is a task's row in the table.
	taskRowLink = regexp.MustCompile(`<tr><td><a href="/jobs/(\d+)"><code>([^<]+)</code></a>`)
	svgSize     = regexp.MustCompile(`<svg class="dag" xmlns="http://www.w3.org/2000/svg" width="(\d+)" height="(\d+)"`)
)

// diamond enqueues a → (b, c) → d in queue q, kinds by name.
func diamond(t *testing.T, c *fenced.Client, name, q string) *fenced.Workflow {
	t.Helper()
	task := func(n string, deps ...string) fenced.WorkflowTaskParams {
		return fenced.WorkflowTaskParams{Name: n, DependsOn: deps,
			Job: fenced.EnqueueParams{Kind: "step." + n, Queue: q, MaxAttempts: 1}}
	}
	w, err := c.EnqueueWorkflow(context.Background(), nil, fenced.WorkflowParams{Name: name,
		Tasks: []fenced.WorkflowTaskParams{task("a"), task("b", "a"), task("c", "a"), task("d", "b", "c")}})
	if err != nil {
		t.Fatalf("enqueue workflow: %v", err)
	}
	return w
}

// work claims one job of q and ends it: completed, or failed for good.
func work(t *testing.T, c *fenced.Client, q string, ok bool) *fenced.Job {
	t.Helper()
	ctx := context.Background()
	got, err := c.ClaimJobs(ctx, q, "worker-wf", 1, time.Minute)
	if err != nil || len(got) != 1 {
		t.Fatalf("claim from %s: %v %v", q, got, err)
	}
	if ok {
		err = c.CompleteJob(ctx, got[0].Ref(), map[string]any{"ok": true})
	} else {
		err = c.FailJob(ctx, got[0].Ref(), "boom <i>", 0, false)
	}
	if err != nil {
		t.Fatal(err)
	}
	return got[0]
}

func taskID(s string) int64 {
	n, _ := strconv.ParseInt(s, 10, 64)
	return n
}

// taskOf is the task of w named name.
func taskOf(t *testing.T, w *fenced.Workflow, name string) fenced.WorkflowTask {
	t.Helper()
	for _, k := range w.Tasks {
		if k.Name == name {
			return k
		}
	}
	t.Fatalf("workflow %d has no task %q", w.ID, name)
	return fenced.WorkflowTask{}
}

// TestWorkflowPages, on PostgreSQL: the list shows a workflow with its
// state and counts, paged as the job browser is; its page shows every
// task in the table and in the graph (a box per task in the column after
// its deepest dependency, an edge per dependency, each box a link to its
// job); a task's job page links its workflow; and the job browser and the
// overview count pending tasks.
func TestWorkflowPages(t *testing.T) {
	t.Parallel()
	e := setupOn(t, testdb.Postgres(t), nil, dashboard.Options{})
	ctx := context.Background()
	w := diamond(t, e.c, "build <release>", "wf")
	// a succeeds, then b (claimed first: the lower id) fails for good: d
	// is cancelled by its workflow, c stays queued.
	work(t, e.c, "wf", true)
	if j := work(t, e.c, "wf", false); j.ID != taskOf(t, w, "b").JobID {
		t.Fatalf("claimed %d, want b's job", j.ID)
	}
	p := newPerson(t, e.url)

	t.Run("List", func(t *testing.T) {
		pg := p.get("/workflows")
		if pg.status != 200 || !strings.Contains(pg.body, fmt.Sprintf(`<a href="/workflows/%d">#%d</a>`, w.ID, w.ID)) ||
			!strings.Contains(pg.body, "build &lt;release&gt;") || strings.Contains(pg.body, "<release>") ||
			!strings.Contains(pg.body, `<span class="badge running">running</span>`) || strings.Contains(pg.body, "<script") {
			t.Fatalf("GET /workflows = %d:\n%s", pg.status, pg.body)
		}
		// pending queued running succeeded failed cancelled, then the total
		counts := `<td class="num zero">0</td><td class="num">1</td><td class="num zero">0</td><td class="num">1</td><td class="num">1</td><td class="num">1</td><td class="num">4</td>`
		if !strings.Contains(pg.body, counts) {
			t.Errorf("the list's counts are not 0 1 0 1 1 1 of 4:\n%s", pg.body)
		}
		if !strings.Contains(p.get("/").body, `<a href="/workflows">Workflows</a>`) {
			t.Error("the navigation does not link the workflows")
		}
		if pg := p.get(fmt.Sprintf("/workflows?id=%d", w.ID)); pg.status != 303 || pg.location != fmt.Sprintf("/workflows/%d", w.ID) {
			t.Errorf("open by id = %d %s", pg.status, pg.location)
		}
		if pg := p.get("/workflows?name=" + url.QueryEscape("build <release>")); !strings.Contains(pg.body, fmt.Sprintf(`href="/workflows/%d"`, w.ID)) {
			t.Errorf("the name filter does not find it:\n%s", pg.body)
		}
		if pg := p.get("/workflows?name=other"); strings.Contains(pg.body, fmt.Sprintf(`href="/workflows/%d"`, w.ID)) {
			t.Errorf("the name filter shows another name's workflow")
		}
	})

	t.Run("WorkflowPage", func(t *testing.T) {
		pg := p.get(fmt.Sprintf("/workflows/%d", w.ID))
		if pg.status != 200 || strings.Contains(pg.body, "<script") || !strings.Contains(pg.body, `http-equiv="refresh"`) {
			t.Fatalf("GET /workflows/%d = %d:\n%s", w.ID, pg.status, pg.body)
		}
		rows := map[string]string{}
		for _, m := range taskRowLink.FindAllStringSubmatch(pg.body, -1) {
			rows[m[2]] = m[1]
		}
		boxes := map[string][]string{} // name: job, state, x
		for _, m := range taskBox.FindAllStringSubmatch(pg.body, -1) {
			boxes[m[2]] = []string{m[1], m[3], m[4]}
		}
		want := map[string]fenced.JobState{"a": fenced.JobSucceeded, "b": fenced.JobFailed, "c": fenced.JobQueued, "d": fenced.JobCancelled}
		if len(rows) != 4 || len(boxes) != 4 {
			t.Fatalf("%d rows and %d boxes, want 4 of each:\n%s", len(rows), len(boxes), pg.body)
		}
		for name, state := range want {
			id := strconv.FormatInt(taskOf(t, w, name).JobID, 10)
			if rows[name] != id || boxes[name][0] != id || boxes[name][1] != string(state) {
				t.Errorf("task %s: row links %s, box %v; want job %s %s", name, rows[name], boxes[name], id, state)
			}
		}
		x := func(name string) int { n, _ := strconv.Atoi(boxes[name][2]); return n }
		if !(x("a") < x("b") && x("b") == x("c") && x("c") < x("d")) {
			t.Errorf("columns a %d, b %d, c %d, d %d: want a, then b and c, then d", x("a"), x("b"), x("c"), x("d"))
		}
		var edges []string
		for _, m := range edgePath.FindAllStringSubmatch(pg.body, -1) {
			edges = append(edges, m[1]+"→"+m[2])
		}
		slices.Sort(edges)
		if fmt.Sprint(edges) != "[a→b a→c b→d c→d]" {
			t.Errorf("edges %v, want one per dependency", edges)
		}
		if !strings.Contains(pg.body, `<span class="badge cancelled">cancelled</span> <span class="muted">by its workflow</span>`) {
			t.Error("d's row does not say its workflow cancelled it")
		}
		if !strings.Contains(pg.body, fmt.Sprintf(`href="/workflows/%d/confirm?action=cancel"`, w.ID)) ||
			!strings.Contains(pg.body, fmt.Sprintf(`href="/workflows/%d/confirm?action=retry"`, w.ID)) {
			t.Errorf("a running workflow with a failed task should offer cancel and retry:\n%s", pg.body)
		}
	})

	t.Run("TaskJobPage", func(t *testing.T) {
		d := taskOf(t, w, "d")
		pg := p.get(fmt.Sprintf("/jobs/%d", d.JobID))
		if pg.status != 200 || !strings.Contains(pg.body, fmt.Sprintf(`<dt>Workflow</dt><dd><a href="/workflows/%d">#%d</a>, task <code>d</code>`, w.ID, w.ID)) {
			t.Fatalf("task d's job page:\n%s", pg.body)
		}
		if strings.Contains(pg.body, "action=delete") {
			t.Error("a task's page offers to delete it alone")
		}
		// Its retry is refused (its dependency is what to retry): 409 with the reason.
		if pg := p.confirm(fmt.Sprintf("action=retry&job=%d", d.JobID)); pg.status != 409 || !strings.Contains(pg.body, "retry that dependency") {
			t.Errorf("retry of a task its workflow cancelled = %d:\n%s", pg.status, pg.body)
		}
		if pg := p.get("/jobs/" + strconv.FormatInt(taskOf(t, w, "a").JobID, 10)); strings.Contains(pg.body, "action=delete") {
			t.Error("a succeeded task's page offers to delete it alone")
		}
	})

	t.Run("PendingJobs", func(t *testing.T) {
		w2, err := e.c.EnqueueWorkflow(ctx, nil, fenced.WorkflowParams{Name: "pair", Tasks: []fenced.WorkflowTaskParams{
			{Name: "first", Job: fenced.EnqueueParams{Kind: "k", Queue: "pend"}},
			{Name: "second", DependsOn: []string{"first"}, Job: fenced.EnqueueParams{Kind: "k", Queue: "pend"}}}})
		if err != nil {
			t.Fatal(err)
		}
		second := taskOf(t, w2, "second")
		pg := p.get("/jobs?state=pending")
		if pg.status != 200 || !strings.Contains(pg.body, `<option value="pending" selected>pending</option>`) {
			t.Fatalf("GET /jobs?state=pending = %d:\n%s", pg.status, pg.body)
		}
		var ids []string
		for _, m := range jobLink.FindAllStringSubmatch(pg.body, -1) {
			ids = append(ids, m[1])
		}
		if fmt.Sprint(ids) != fmt.Sprintf("[%d]", second.JobID) {
			t.Errorf("pending jobs %v, want [%d]", ids, second.JobID)
		}
		ov := p.get("/").body
		if !strings.Contains(ov, `<th class="num">pending</th>`) || !strings.Contains(ov, `<a href="/jobs?queue=pend&amp;state=pending">1</a>`) {
			t.Errorf("the overview does not count the pending job:\n%s", ov)
		}
		if pg := p.get(fmt.Sprintf("/jobs/%d", second.JobID)); !strings.Contains(pg.body, "waits for its dependencies") ||
			!strings.Contains(pg.body, "action=cancel&amp;job=") {
			t.Errorf("a pending task's page should say it waits and offer cancel:\n%s", pg.body)
		}
	})

	t.Run("Paged", func(t *testing.T) {
		for i := range 52 {
			if _, err := e.c.EnqueueWorkflow(ctx, nil, fenced.WorkflowParams{Name: "many", Tasks: []fenced.WorkflowTaskParams{
				{Name: "only", Job: fenced.EnqueueParams{Kind: "k", Queue: fmt.Sprintf("many%d", i%2)}}}}); err != nil {
				t.Fatal(err)
			}
		}
		link := regexp.MustCompile(`<td><a href="/workflows/(\d+)">#`)
		pager := regexp.MustCompile(`<a href="/workflows\?([^"]+)" rel="(prev|next)">`)
		first := p.get("/workflows?name=many")
		var next string
		for _, m := range pager.FindAllStringSubmatch(first.body, -1) {
			if m[2] == "next" {
				next = "/workflows?" + htmlUnescape(m[1])
			}
		}
		second := p.get(next)
		a, b := link.FindAllStringSubmatch(first.body, -1), link.FindAllStringSubmatch(second.body, -1)
		if len(a) != 50 || len(b) != 2 || next == "" {
			t.Fatalf("pages of %d and %d workflows (next %q), want 50 and 2", len(a), len(b), next)
		}
		if x, _ := strconv.ParseInt(a[49][1], 10, 64); x <= taskID(b[0][1]) {
			t.Errorf("the older page starts at #%s, after #%d", b[0][1], x)
		}
		for _, bad := range []string{"/workflows?before=x", "/workflows?id=-3"} {
			if pg := p.get(bad); pg.status != 400 {
				t.Errorf("GET %s = %d, want 400", bad, pg.status)
			}
		}
	})

	for name, path := range map[string]string{"Unknown": "/workflows/999999", "NotAnID": "/workflows/x%3Cb%3E",
		"UnknownConfirm": "/workflows/999999/confirm?action=cancel"} {
		t.Run(name, func(t *testing.T) {
			if pg := p.get(path); pg.status != 404 || strings.Contains(pg.body, "<b>") {
				t.Fatalf("GET %s = %d:\n%s", path, pg.status, pg.body)
			}
		})
	}
}

// TestWorkflowActions, on PostgreSQL: cancel and retry are confirmed on a
// page, refused without the session's CSRF token (or from another
// site), done by the confirmation's form and logged.
func TestWorkflowActions(t *testing.T) {
	t.Parallel()
	var log logbuf.Buffer
	e := setupOn(t, testdb.Postgres(t), nil, dashboard.Options{Logger: slog.New(slog.NewTextHandler(&log, nil))})
	ctx := context.Background()
	w := diamond(t, e.c, "deploy", "act")
	p := newPerson(t, e.url)
	state := func() *fenced.Workflow {
		t.Helper()
		got, err := e.c.GetWorkflow(ctx, w.ID)
		if err != nil {
			t.Fatal(err)
		}
		return got
	}

	c := p.get(fmt.Sprintf("/workflows/%d/confirm?action=cancel", w.ID))
	if c.status != 200 || !strings.Contains(c.body, fmt.Sprintf("Cancel workflow #%d?", w.ID)) ||
		!strings.Contains(c.body, fmt.Sprintf(`action="/workflows/%d/act"`, w.ID)) {
		t.Fatalf("confirmation = %d:\n%s", c.status, c.body)
	}
	if got := state(); got.CancelledAt != nil || got.State != fenced.WorkflowRunning {
		t.Fatal("the confirmation page changed the workflow")
	}
	good := form(t, c.body)
	for name, tc := range map[string]struct {
		who     *person
		edit    func(url.Values)
		headers []string
	}{
		"Missing":   {p, func(v url.Values) { v.Del("csrf") }, nil},
		"Wrong":     {p, func(v url.Values) { v.Set("csrf", strings.Repeat("A", 43)) }, nil},
		"NoSession": {newPerson(t, e.url), func(url.Values) {}, nil},
		"CrossSite": {p, func(url.Values) {}, []string{"Sec-Fetch-Site", "cross-site"}},
	} {
		v := url.Values{}
		for k, vs := range good {
			v[k] = slices.Clone(vs)
		}
		tc.edit(v)
		if pg := tc.who.post(fmt.Sprintf("/workflows/%d/act", w.ID), v, tc.headers...); pg.status != 403 {
			t.Errorf("%s: POST = %d, want 403:\n%s", name, pg.status, pg.body)
		}
	}
	if got := state(); got.CancelledAt != nil || got.Counts[fenced.JobCancelled] != 0 {
		t.Fatalf("a refused action changed the workflow: %+v", got)
	}

	pg := p.post(fmt.Sprintf("/workflows/%d/act", w.ID), good)
	if pg.status != 200 || !strings.Contains(pg.body, fmt.Sprintf("Workflow #%d cancelled", w.ID)) ||
		!strings.Contains(pg.body, `<span class="badge cancelled">cancelled</span>: 4 cancelled`) {
		t.Fatalf("cancel = %d:\n%s", pg.status, pg.body)
	}
	if got := state(); got.State != fenced.WorkflowCancelled || got.Counts[fenced.JobCancelled] != 4 {
		t.Fatalf("after cancel: %s %v", got.State, got.Counts)
	}
	page := p.get(fmt.Sprintf("/workflows/%d", w.ID)).body
	if strings.Contains(page, "action=cancel") || !strings.Contains(page, "action=retry") {
		t.Fatalf("a cancelled workflow should offer retry only:\n%s", page)
	}
	if strings.Contains(page, `http-equiv="refresh"`) {
		t.Error("a finished workflow's page reloads itself")
	}

	c = p.get(fmt.Sprintf("/workflows/%d/confirm?action=retry", w.ID))
	if pg := p.post(fmt.Sprintf("/workflows/%d/act", w.ID), form(t, c.body)); pg.status != 200 ||
		!strings.Contains(pg.body, fmt.Sprintf("Workflow #%d retried", w.ID)) {
		t.Fatalf("retry = %d:\n%s", pg.status, pg.body)
	}
	if got := state(); got.State != fenced.WorkflowRunning || got.CancelledAt != nil || taskOf(t, got, "a").State != fenced.JobQueued {
		t.Fatalf("after retry: %s %v", got.State, got.Counts)
	}

	if pg := p.get(fmt.Sprintf("/workflows/%d/confirm?action=explode", w.ID)); pg.status != 400 {
		t.Errorf("an unknown action = %d", pg.status)
	}
	bad := form(t, c.body)
	bad.Set("action", "delete")
	if pg := p.post(fmt.Sprintf("/workflows/%d/act", w.ID), bad); pg.status != 400 {
		t.Errorf("posting an unknown action = %d", pg.status)
	}
	if pg := p.post("/workflows/999999/act", form(t, c.body)); pg.status != 404 {
		t.Errorf("an action on no workflow = %d", pg.status)
	}
	for _, want := range []string{"action=cancel", "action=retry", fmt.Sprintf("workflow=%d", w.ID), "result=cancelled", "result=retried"} {
		if !strings.Contains(log.String(), want) {
			t.Errorf("the log lacks %q:\n%s", want, log.String())
		}
	}
}

// TestWorkflowGraphIsBounded, on PostgreSQL: a workflow of one task, 1000
// after it and one after those is drawn in three columns of at most 16
// boxes, the 985 tasks not drawn counted in a "+985 more" box, in an SVG
// of bounded size; its failed tasks are among those drawn; the table
// shows 500 tasks a page.
func TestWorkflowGraphIsBounded(t *testing.T) {
	t.Parallel()
	e := setupOn(t, testdb.Postgres(t), nil, dashboard.Options{})
	ctx := context.Background()
	job := fenced.EnqueueParams{Kind: "fan", Queue: "fan", MaxAttempts: 1}
	tasks := []fenced.WorkflowTaskParams{{Name: "start", Job: job}}
	var middle []string
	for i := range 1000 {
		n := fmt.Sprintf("part-%04d", i)
		middle = append(middle, n)
		tasks = append(tasks, fenced.WorkflowTaskParams{Name: n, DependsOn: []string{"start"}, Job: job})
	}
	tasks = append(tasks, fenced.WorkflowTaskParams{Name: "end", DependsOn: middle, Job: job})
	w, err := e.c.EnqueueWorkflow(ctx, nil, fenced.WorkflowParams{Name: "fan", Tasks: tasks})
	if err != nil {
		t.Fatal(err)
	}
	work(t, e.c, "fan", true) // start
	// Two middle tasks fail, late in the order: the graph still shows them.
	got, err := e.c.ClaimJobs(ctx, "fan", "w", 1000, time.Minute)
	if err != nil || len(got) != 1000 {
		t.Fatalf("claimed %d: %v", len(got), err)
	}
	failed := map[string]bool{}
	for _, j := range got[len(got)-2:] {
		if err := e.c.FailJob(ctx, j.Ref(), "boom", 0, false); err != nil {
			t.Fatal(err)
		}
		failed[j.TaskName] = true
	}

	p := newPerson(t, e.url)
	pg := p.get(fmt.Sprintf("/workflows/%d", w.ID))
	if pg.status != 200 {
		t.Fatalf("GET = %d", pg.status)
	}
	start := strings.Index(pg.body, `<svg class="dag"`)
	end := strings.Index(pg.body[max(start, 0):], `</svg>`)
	if start < 0 || end < 0 {
		t.Fatalf("no graph:\n%s", pg.body)
	}
	svg := pg.body[start : start+end]
	boxes := taskBox.FindAllStringSubmatch(svg, -1)
	edges := edgePath.FindAllStringSubmatch(svg, -1)
	if len(boxes) != 1+15+1 || strings.Count(svg, `<a class="more"`) != 1 || !strings.Contains(svg, "+985 more") {
		t.Fatalf("%d task boxes and %d more boxes, want 17 and one +985 more", len(boxes), strings.Count(svg, `<a class="more"`))
	}
	if len(edges) != 2*16 {
		t.Errorf("%d edges, want 32 (start to each middle box, each to end)", len(edges))
	}
	shown := map[string]string{}
	for _, m := range boxes {
		shown[m[2]] = m[3]
	}
	for n := range failed {
		if shown[n] != "failed" {
			t.Errorf("failed task %s is not drawn (drawn: %v)", n, shown)
		}
	}
	size := svgSize.FindStringSubmatch(svg)
	wd, _ := strconv.Atoi(size[1])
	ht, _ := strconv.Atoi(size[2])
	if len(svg) > 32<<10 || wd > 1000 || ht > 1000 {
		t.Errorf("the graph is %d bytes, %d×%d", len(svg), wd, ht)
	}
	if !strings.Contains(pg.body, `985 tasks are drawn only as part of a "+N more" box`) {
		t.Error("the page does not say tasks were left out of the graph")
	}
	if rows := taskRowLink.FindAllStringSubmatch(pg.body, -1); len(rows) != 500 || !strings.Contains(pg.body, "1–500 of 1002") {
		t.Errorf("the table's first page has %d rows", len(rows))
	}
	if rows := taskRowLink.FindAllStringSubmatch(p.get(fmt.Sprintf("/workflows/%d?page=3", w.ID)).body, -1); len(rows) != 2 {
		t.Errorf("the table's last page has %d rows, want 2", len(rows))
	}
	// end (the last task) depends on 1000 tasks: its row names the first ten.
	if !strings.Contains(p.get(fmt.Sprintf("/workflows/%d?page=3", w.ID)).body, "and 990 more") {
		t.Error("end's row does not bound its dependencies")
	}
	if pg := p.get(fmt.Sprintf("/workflows/%d?page=0", w.ID)); pg.status != 400 {
		t.Errorf("page 0 = %d", pg.status)
	}
}

// noWorkflows is a backend with the job queue and the clock but without
// the workflows.
type noWorkflows struct {
	driver.Driver
	driver.JobDriver
	driver.Clock
}

// On a backend without workflows every workflow page and action answers
// 501 with the Client's error for them; without the job queue, with its.
func TestABackendWithoutWorkflowsSaysSo(t *testing.T) {
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
	for _, b := range []struct {
		name  string
		c     *fenced.Client
		cap   fenced.Capability
		title string
	}{
		{"NoWorkflows", fenced.New(noWorkflows{d, d.(driver.JobDriver), d.(driver.Clock)}, fenced.Config{}), fenced.CapWorkflows, "No workflows"},
		{"NoJobs", fenced.New(coreOnly{d}, fenced.Config{}), fenced.CapJobs, "No job queue"},
	} {
		t.Run(b.name, func(t *testing.T) {
			if b.c.Supports(b.cap) {
				t.Fatalf("the backend has %s", b.cap)
			}
			ts := httptest.NewServer(dashboard.New(b.c, nil, dashboard.Options{}))
			t.Cleanup(ts.Close)
			want := b.c.Unsupported(b.cap).Error()
			p := newPerson(t, ts.URL)
			pages := []page{p.get("/workflows"), p.get("/workflows/1"), p.get("/workflows/1/confirm?action=cancel"),
				p.post("/workflows/1/act", url.Values{"action": {"cancel"}})}
			for i, pg := range pages {
				if pg.status != http.StatusNotImplemented || !strings.Contains(pg.body, b.title) || !strings.Contains(pg.body, want) {
					t.Errorf("page %d = %d, want 501 %q:\n%s", i, pg.status, want, pg.body)
				}
			}
			if b.cap == fenced.CapWorkflows {
				if pg := p.get("/jobs"); pg.status != 200 {
					t.Errorf("the job browser without workflows = %d", pg.status)
				}
			}
		})
	}
}

// TestWorkflowInBrowser, on PostgreSQL in headless Chromium: the workflow
// page draws its graph (the policy lets inline SVG through: no script,
// nothing loaded), its boxes link the tasks' jobs, and a screenshot of
// the page is saved (workflow.png in the artifacts directory).
func TestWorkflowInBrowser(t *testing.T) {
	t.Parallel()
	bin := chromium(t)
	e := setupOn(t, testdb.Postgres(t), nil, dashboard.Options{})
	w := diamond(t, e.c, "release", "wfb")
	work(t, e.c, "wfb", true)
	work(t, e.c, "wfb", false)
	path := fmt.Sprintf("/workflows/%d", w.ID)
	dom := browse(t, bin, e.url+path, "--dump-dom")
	if n := len(taskBox.FindAllString(dom, -1)); n != 4 || len(edgePath.FindAllString(dom, -1)) != 4 {
		t.Fatalf("the browser's DOM holds %d boxes:\n%s", n, dom)
	}
	got := section(t, dom, "tasks")
	for _, want := range []string{"a #" + strconv.FormatInt(taskOf(t, w, "a").JobID, 10) + " step.a wfb succeeded —",
		"d #" + strconv.FormatInt(taskOf(t, w, "d").JobID, 10) + " step.d wfb cancelled by its workflow b , c"} {
		if !strings.Contains(got, want) {
			t.Errorf("the tasks read %q, want them to contain %q", got, want)
		}
	}
	shot := filepath.Join(artifacts(t), "workflow.png")
	browse(t, bin, e.url+path, "--screenshot="+shot, "--window-size=1280,900", "--hide-scrollbars")
	if fi, err := os.Stat(shot); err != nil || fi.Size() == 0 {
		t.Fatalf("screenshot %s not written: %v", shot, err)
	}
	t.Logf("screenshot of %s: %s", path, shot)
}
