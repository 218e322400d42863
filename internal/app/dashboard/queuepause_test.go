package dashboard_test

import (
	"context"
	"log/slog"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/fenced/fenced/internal/test/logbuf"

	"github.com/fenced/fenced"
	"github.com/fenced/fenced/internal/app/dashboard"
)

// TestPauseResumeQueue: the jobs page of a queue and the overview offer
// Pause; confirmed and posted, it pauses the queue (claims take nothing
// from it), the pages say so and offer Resume, which undoes it. Both are
// logged.
func TestPauseResumeQueue(t *testing.T) {
	t.Parallel()
	var log logbuf.Buffer
	e := setupWith(t, nil, dashboard.Options{Logger: slog.New(slog.NewTextHandler(&log, nil))})
	ctx := context.Background()
	if _, _, err := e.c.Enqueue(ctx, fenced.EnqueueParams{Kind: "k", Queue: "pq"}); err != nil {
		t.Fatal(err)
	}
	p := newPerson(t, e.url)
	if pg := p.get("/jobs?queue=pq"); !strings.Contains(pg.body, `href="/confirm?action=pause&amp;queue=pq"`) ||
		strings.Contains(pg.body, ">paused<") {
		t.Fatalf("the jobs page of the queue does not offer pause:\n%s", pg.body)
	}
	if pg := p.get("/jobs"); strings.Contains(pg.body, `id="queue-actions"`) {
		t.Fatalf("the jobs page without a queue filter offers queue actions:\n%s", pg.body)
	}
	if pg := p.get("/"); !strings.Contains(pg.body, `href="/confirm?action=pause&amp;queue=pq"`) {
		t.Fatalf("the overview does not offer pause:\n%s", pg.body)
	}

	c := p.get("/confirm?action=pause&queue=pq")
	if c.status != 200 || !strings.Contains(c.body, "Pause queue pq?") {
		t.Fatalf("confirm pause = %d:\n%s", c.status, c.body)
	}
	if ps, _ := e.c.ListQueuePauses(ctx); len(ps) != 0 {
		t.Fatalf("the confirmation page paused the queue: %v", ps)
	}
	if pg := p.post("/act", form(t, c.body)); pg.status != 200 || !strings.Contains(pg.body, "Queue pq paused") {
		t.Fatalf("pause = %d:\n%s", pg.status, pg.body)
	}
	if ps, err := e.c.ListQueuePauses(ctx); err != nil || len(ps) != 1 || ps[0].Queue != "pq" {
		t.Fatalf("after pause ListQueuePauses = %v, %v", ps, err)
	}
	if got, err := e.c.ClaimJobs(ctx, "pq", "w", 10, time.Minute); err != nil || len(got) != 0 {
		t.Fatalf("a claim on the paused queue took %d jobs (%v)", len(got), err)
	}
	if pg := p.get("/"); !strings.Contains(pg.body, `class="badge paused"`) ||
		!strings.Contains(pg.body, `href="/confirm?action=resume&amp;queue=pq"`) {
		t.Fatalf("the overview does not show the pause and offer resume:\n%s", pg.body)
	}
	if pg := p.get("/jobs?queue=pq"); !strings.Contains(pg.body, ">paused<") ||
		!strings.Contains(pg.body, `href="/confirm?action=resume&amp;queue=pq"`) {
		t.Fatalf("the jobs page does not show the pause and offer resume:\n%s", pg.body)
	}
	if pg := p.confirm("action=pause&queue=pq"); pg.status != 200 || !strings.Contains(pg.body, "Queue pq was already paused") {
		t.Fatalf("pause again = %d:\n%s", pg.status, pg.body)
	}

	if pg := p.confirm("action=resume&queue=pq"); pg.status != 200 || !strings.Contains(pg.body, "Queue pq resumed") {
		t.Fatalf("resume = %d:\n%s", pg.status, pg.body)
	}
	if ps, err := e.c.ListQueuePauses(ctx); err != nil || len(ps) != 0 {
		t.Fatalf("after resume ListQueuePauses = %v, %v", ps, err)
	}
	if got, err := e.c.ClaimJobs(ctx, "pq", "w", 10, time.Minute); err != nil || len(got) != 1 {
		t.Fatalf("a claim on the resumed queue took %d jobs (%v)", len(got), err)
	}
	if pg := p.get("/"); strings.Contains(pg.body, `class="badge paused"`) {
		t.Fatalf("the overview still shows a pause:\n%s", pg.body)
	}

	for _, bad := range []string{"/confirm?action=pause", "/confirm?action=pause&queue=pq&job=1"} {
		if pg := p.get(bad); pg.status != 400 {
			t.Errorf("GET %s = %d, want 400", bad, pg.status)
		}
	}
	if pg := p.confirm("action=pause&queue=no%20spaces"); pg.status != 400 {
		t.Errorf("pausing a queue of an invalid name = %d, want 400:\n%s", pg.status, pg.body)
	}
	for _, want := range []string{"action=pause queue=pq result=paused", "action=pause queue=pq result=unchanged",
		"action=resume queue=pq result=resumed"} {
		if !strings.Contains(log.String(), want) {
			t.Errorf("the log lacks %q:\n%s", want, log.String())
		}
	}
	if strings.Contains(log.String(), "csrf") {
		t.Errorf("the log names the CSRF token:\n%s", log.String())
	}
}

// TestPauseRefusedWithoutCSRF: a pause or resume posted without the
// session's token, or with a wrong one, is refused and changes nothing.
func TestPauseRefusedWithoutCSRF(t *testing.T) {
	t.Parallel()
	e := setup(t)
	ctx := context.Background()
	p := newPerson(t, e.url)
	for _, name := range []string{"pause", "resume"} {
		if name == "resume" {
			if _, _, err := e.c.PauseQueue(ctx, "cq"); err != nil {
				t.Fatal(err)
			}
		}
		good := form(t, p.get("/confirm?action="+name+"&queue=cq").body)
		for how, edit := range map[string]func(url.Values){
			"Missing": func(v url.Values) { v.Del("csrf") },
			"Wrong":   func(v url.Values) { v.Set("csrf", strings.Repeat("A", 43)) },
		} {
			v := url.Values{}
			for k, vs := range good {
				v[k] = append([]string(nil), vs...)
			}
			edit(v)
			if pg := p.post("/act", v); pg.status != 403 {
				t.Fatalf("%s with the token %s = %d, want 403:\n%s", name, how, pg.status, pg.body)
			}
		}
		ps, err := e.c.ListQueuePauses(ctx)
		if err != nil || len(ps) != map[string]int{"pause": 0, "resume": 1}[name] {
			t.Fatalf("a refused %s changed the pauses: %v %v", name, ps, err)
		}
	}
}
