package dashboard_test

import (
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/fenced/fenced/internal/app/dashboard"
)

func get(t *testing.T, url string) (int, http.Header, string) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header, string(b)
}

func TestPages(t *testing.T) {
	t.Parallel()
	e := setup(t)
	bad := e.scenario()

	t.Run("OverviewIsEscapedHTMLWithoutScripts", func(t *testing.T) {
		status, h, body := get(t, e.url+"/")
		if status != 200 || !strings.HasPrefix(h.Get("Content-Type"), "text/html") {
			t.Fatalf("GET / = %d %s", status, h.Get("Content-Type"))
		}
		if !strings.Contains(body, `http-equiv="refresh"`) || strings.Contains(body, "<script") {
			t.Error("the overview should refresh itself and carry no script")
		}
		if !strings.Contains(body, "relay &lt;denied&gt;") {
			t.Error("the failure's error is not on the overview, escaped")
		}
	})
	t.Run("JobPageListsAttempts", func(t *testing.T) {
		status, _, body := get(t, fmt.Sprintf("%s/jobs/%d", e.url, bad))
		if status != 200 || strings.Count(body, "worker-") < 2 {
			t.Fatalf("GET /jobs/%d = %d, want both attempts:\n%s", bad, status, body)
		}
	})
	t.Run("FinishedJobShowsItsLastAttemptNotARunTime", func(t *testing.T) {
		// The dead job's run time was its last attempt's schedule: on its
		// page, when that attempt started and when the job finished.
		_, _, body := get(t, fmt.Sprintf("%s/jobs/%d", e.url, bad))
		if strings.Contains(body, "<dt>Run at</dt>") || !strings.Contains(body, "<dt>Last attempt started</dt>") ||
			!strings.Contains(body, "<dt>Finished</dt>") {
			t.Fatalf("dead job's page:\n%s", body)
		}
		// Its owner is its last attempt's, not a holder's.
		if strings.Contains(body, "<dt>Owner</dt>") || !strings.Contains(body, "<dt>Last owner</dt><dd>worker-c</dd>") {
			t.Fatalf("dead job's page labels its owner as a holder:\n%s", body)
		}
		// A running job (the quiet worker's, just after it) has an owner.
		_, _, body = get(t, fmt.Sprintf("%s/jobs/%d", e.url, bad+1))
		if !strings.Contains(body, "<dt>Owner</dt><dd>worker-gone</dd>") || strings.Contains(body, "<dt>Last owner</dt>") {
			t.Fatalf("running job's page:\n%s", body)
		}
		// A queued job (the mail job enqueued just before) still shows when it runs.
		_, _, body = get(t, fmt.Sprintf("%s/jobs/%d", e.url, bad-1))
		if !strings.Contains(body, "<dt>Run at</dt>") || strings.Contains(body, "<dt>Finished</dt>") {
			t.Fatalf("queued job's page:\n%s", body)
		}
	})
	for name, path := range map[string]string{
		"UnknownJobIsNotFound":  "/jobs/999999",
		"BadJobIDIsNotFound":    "/jobs/x%3Cb%3E",
		"UnknownPageIsNotFound": "/nope",
		"NegativeJobIsNotFound": "/jobs/-1",
	} {
		t.Run(name, func(t *testing.T) {
			status, _, body := get(t, e.url+path)
			if status != 404 || !strings.Contains(body, "Not found") || strings.Contains(body, "<b>") {
				t.Fatalf("GET %s = %d:\n%s", path, status, body)
			}
		})
	}
}

// The panel of jobs running past their lease says who takes them back: the
// server's maintenance, or, on a server running none, a maintainer
// elsewhere, which it names.
func TestOverduePanelSaysWhoRecoversTheJobs(t *testing.T) {
	t.Parallel()
	for _, off := range []bool{false, true} {
		e := setupWith(t, nil, dashboard.Options{NoMaintenance: off})
		e.scenario()
		_, _, body := get(t, e.url+"/")
		i := strings.Index(body, `<section id="overdue">`)
		if i < 0 {
			t.Fatalf("no overdue panel:\n%s", body)
		}
		panel := body[i : i+strings.Index(body[i:], "</section>")]
		saysOff := strings.Contains(panel, "This server runs no job maintenance (it was started with --no-maintenance)") &&
			strings.Contains(panel, "a fenced serve without --no-maintenance") && strings.Contains(panel, "StartMaintenance")
		saysOn := strings.Contains(panel, "the job maintenance this server runs")
		if saysOff != off || saysOn == off {
			t.Errorf("NoMaintenance %v, panel:\n%s", off, panel)
		}
	}
}

// Every dashboard page links the API's page.
func TestPagesLinkTheAPIPage(t *testing.T) {
	t.Parallel()
	e := setup(t)
	for _, path := range []string{"/", "/jobs", "/charts"} {
		if _, _, body := get(t, e.url+path); !strings.Contains(body, `<a href="/v1/openapi.html">API</a>`) {
			t.Errorf("GET %s has no link to the API page", path)
		}
	}
	if status, h, body := get(t, e.url+"/v1/openapi.html"); status != 200 || !strings.HasPrefix(h.Get("Content-Type"), "text/html") ||
		!strings.Contains(body, `<section id="schema-Job">`) {
		t.Fatalf("GET /v1/openapi.html = %d %s", status, h.Get("Content-Type"))
	}
}
