package dashboard_test

import (
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
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
