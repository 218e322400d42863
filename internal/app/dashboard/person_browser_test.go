package dashboard_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/fenced/fenced"
	"github.com/fenced/fenced/internal/app/dashboard"
	"github.com/fenced/fenced/internal/test/testdb"
)

// TestPersonInBrowser drives headless Chromium (the installed
// /usr/bin/chromium, over the DevTools protocol) as a person would: log in
// with a token, filter the jobs to the failed ones, open one, retry it
// and confirm, pause the job's queue, then see the charts. It saves a screenshot of each
// step into the artifacts directory ($FENCED_ARTIFACTS, else the test's
// temporary directory), in person/.
func TestPersonInBrowser(t *testing.T) {
	t.Parallel()
	bin := chromium(t)
	e := setupWith(t, []string{testToken}, dashboard.Options{})
	bad := e.scenario()
	dir := filepath.Join(artifacts(t), "person")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}

	opts := []chromedp.ExecAllocatorOption{chromedp.ExecPath(bin), chromedp.Headless, chromedp.NoSandbox,
		chromedp.DisableGPU, chromedp.NoFirstRun, chromedp.NoDefaultBrowserCheck,
		chromedp.Flag("disable-background-networking", true), chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true), chromedp.Flag("disable-quic", true),
		chromedp.UserDataDir(t.TempDir()), chromedp.WindowSize(1280, 900)}
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	defer cancelAlloc()
	ctx, cancel := chromedp.NewContext(actx)
	defer cancel()
	ctx, cancelTime := context.WithTimeout(ctx, 90*time.Second)
	defer cancelTime()

	step := 0
	shot := func(name string) chromedp.Action[chromedp.Void] {
		return chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
			png, err := chromedp.FullScreenshot(100)(ctx, tg)
			if err != nil {
				return err
			}
			step++
			path := filepath.Join(dir, fmt.Sprintf("%02d-%s.png", step, name))
			t.Logf("screenshot: %s", path)
			return os.WriteFile(path, png, 0o644)
		})
	}
	run := func(what string, steps ...chromedp.Action[chromedp.Void]) {
		t.Helper()
		if err := chromedp.Do(ctx, steps...); err != nil {
			t.Fatalf("%s: %v", what, err)
		}
	}
	text := func(sel string) string {
		t.Helper()
		s, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS(sel)))
		if err != nil {
			t.Fatalf("read %s: %v", sel, err)
		}
		return strings.Join(strings.Fields(s), " ")
	}

	// at waits until the page's URL contains part (a click navigated).
	// Reading the URL while the old page unloads can fail ("Inspected
	// target navigated or closed"); that is the navigation under way, so
	// at reads again until its context ends, and then reports the last
	// URL and error it saw.
	at := func(part string) chromedp.Action[chromedp.Void] {
		return chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
			for {
				loc, err := chromedp.Location()(ctx, tg)
				if err == nil && strings.Contains(loc, part) {
					return nil
				}
				select {
				case <-ctx.Done():
					return fmt.Errorf("the page stayed at %q (last error %v), waiting for %q: %w", loc, err, part, ctx.Err())
				case <-time.After(50 * time.Millisecond):
				}
			}
		})
	}

	run("open the dashboard", chromedp.Navigate(e.url+"/"), chromedp.WaitVisible(chromedp.CSS("#token")), shot("login"))
	if loc, err := chromedp.Run(ctx, chromedp.Location()); err != nil || !strings.Contains(loc, "/login?next=") {
		t.Fatalf("the dashboard without a session is at %s (%v), want the login page", loc, err)
	}
	run("log in", chromedp.SendKeys(chromedp.CSS("#token"), testToken),
		chromedp.Submit(chromedp.CSS("#token")), chromedp.WaitVisible(chromedp.CSS("#queues")), shot("overview"))

	run("filter the failed jobs", chromedp.Navigate(e.url+"/jobs"), chromedp.WaitVisible(chromedp.CSS("#filter")),
		chromedp.SetValue(chromedp.CSS(`select[name="state"]`), "failed"),
		chromedp.Click(chromedp.CSS(`#filter button[type="submit"]`)),
		at("state=failed"), chromedp.WaitVisible(chromedp.CSS("#list")), shot("jobs-failed"))
	if got := text("#list"); !strings.Contains(got, fmt.Sprintf("#%d report.build reports failed", bad)) ||
		strings.Contains(got, "email.send") {
		t.Fatalf("the failed jobs read %q", got)
	}

	run("open the job", chromedp.Click(chromedp.CSS(fmt.Sprintf(`#list a[href="/jobs/%d"]`, bad))),
		chromedp.WaitVisible(chromedp.CSS("#attempts")), shot("job"))
	if got := text("#attempts"); !strings.Contains(got, "Attempt 2 failed · fence 2 · owner worker-c") {
		t.Fatalf("the attempts read %q", got)
	}

	run("ask to retry", chromedp.Click(chromedp.CSS(`#actions a[href^="/confirm?action=retry"]`)),
		chromedp.WaitVisible(chromedp.CSS("#confirm-button")), shot("confirm-retry"))
	if j, _, _ := e.c.GetJob(context.Background(), bad); j.State != fenced.JobFailed {
		t.Fatalf("the confirmation page changed the job: %s", j.State)
	}
	run("confirm", chromedp.Click(chromedp.CSS("#confirm-button")),
		chromedp.WaitVisible(chromedp.CSS("#result")), shot("retried"))
	if got := text("main h1"); got != "1 job retried" {
		t.Fatalf("the result reads %q", got)
	}
	j, _, _ := e.c.GetJob(context.Background(), bad)
	if j.State != fenced.JobQueued {
		t.Fatalf("after the retry the job is %s", j.State)
	}

	run("pause its queue", chromedp.Navigate(e.url+"/jobs?queue="+j.Queue), chromedp.WaitVisible(chromedp.CSS("#queue-actions")),
		chromedp.Click(chromedp.CSS(`#queue-action[href^="/confirm?action=pause"]`)),
		chromedp.WaitVisible(chromedp.CSS("#confirm-button")), chromedp.Click(chromedp.CSS("#confirm-button")),
		chromedp.WaitVisible(chromedp.CSS("#result")))
	if got := text("main h1"); got != "Queue "+j.Queue+" paused" {
		t.Fatalf("the result reads %q", got)
	}
	run("back to the queue", chromedp.Click(chromedp.CSS(`#result a.btn`)), at("/jobs?queue="),
		chromedp.WaitVisible(chromedp.CSS("#queue-actions")), shot("paused"))
	if got := text("#queue-actions h2"); !strings.Contains(got, "paused") {
		t.Fatalf("the queue reads %q", got)
	}
	if ps, err := e.c.ListQueuePauses(context.Background()); err != nil || len(ps) != 1 || ps[0].Queue != j.Queue {
		t.Fatalf("after the pause ListQueuePauses = %v, %v", ps, err)
	}

	// The hour so far, rolled up as a maintainer would once its minutes
	// are over (moved three minutes back so that they are).
	testdb.SQLiteBackdate(t, e.db, 3*time.Minute)
	if _, err := e.c.RollupJobMinutes(context.Background()); err != nil {
		t.Fatalf("rollup: %v", err)
	}
	run("see the charts", chromedp.Click(chromedp.CSS(`header nav a[href="/charts"]`)), at("/charts"),
		chromedp.WaitVisible(chromedp.CSS("#charts svg.chart")), shot("charts"))
	if got := text("#charts"); !strings.Contains(got, "3 succeeded") || !strings.Contains(got, "Claim wait") {
		t.Fatalf("the charts read %q", got)
	}
}
