package main

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/fenced/fenced"
)

// TestQueuePauseResume: "queue pause" stops claims of the queue, "queue
// ls" lists it, "queue resume" makes its jobs claimable again; both report
// whether they changed the queue, as text or JSON.
func TestQueuePauseResume(t *testing.T) {
	t.Parallel()
	eachDB(t, func(t *testing.T, c cli) {
		contains(t, "pause", c.ok("queue", "pause", "mail"), `queue "mail" paused since `)
		var st struct {
			Queue    string `json:"queue"`
			Paused   bool   `json:"paused"`
			PausedAt string `json:"paused_at"`
			Changed  bool   `json:"changed"`
		}
		c.json(&st, "queue", "pause", "mail", "--json")
		if st.Queue != "mail" || !st.Paused || st.Changed || st.PausedAt == "" {
			t.Fatalf("pause again --json = %+v", st)
		}
		contains(t, "pause again", c.ok("queue", "pause", "mail"), "already paused")
		c.ok("queue", "pause", "other")

		var ls []fenced.QueuePause
		c.json(&ls, "queue", "ls", "--json")
		if len(ls) != 2 || ls[0].Queue != "mail" || ls[1].Queue != "other" {
			t.Fatalf("ls --json = %+v", ls)
		}
		out := c.ok("queue", "ls")
		contains(t, "ls", out, "PAUSED_AT")
		contains(t, "ls", out, "mail")

		// A claim of the paused queue takes nothing; enqueue still works.
		c.ok("job", "enqueue", "send", "--queue", "mail")
		cl, err := fenced.Open(context.Background(), c.db, fenced.Config{})
		if err != nil {
			t.Fatal(err)
		}
		defer cl.Close()
		if jobs, err := cl.ClaimJobs(context.Background(), "mail", "w", 10, time.Minute); err != nil || len(jobs) != 0 {
			t.Fatalf("claim of a paused queue = %d jobs, %v", len(jobs), err)
		}

		st.PausedAt = ""
		c.json(&st, "queue", "resume", "mail", "--json")
		if st.Queue != "mail" || st.Paused || !st.Changed || st.PausedAt != "" {
			t.Fatalf("resume --json = %+v", st)
		}
		contains(t, "resume again", c.ok("queue", "resume", "mail"), `queue "mail" was not paused`)
		contains(t, "resume", c.ok("queue", "resume", "other"), `queue "other" resumed`)
		if jobs, err := cl.ClaimJobs(context.Background(), "mail", "w", 10, time.Minute); err != nil || len(jobs) != 1 {
			t.Fatalf("claim after resume = %d jobs, %v", len(jobs), err)
		}
		c.json(&ls, "queue", "ls", "--json")
		if len(ls) != 0 {
			t.Fatalf("ls after resume = %+v", ls)
		}
		c.fails(2, "queue", "pause")
		c.fails(2, "queue", "pause", "a b")
		c.fails(2, "queue", "resume", "")
		c.fails(2, "queue", "ls", "mail")
		if r := c.run("queue"); r.code != 2 || !strings.Contains(r.stderr, "fenced queue pause") {
			t.Fatalf("bare queue: exit %d, stderr %q; want 2 and the help", r.code, r.stderr)
		}
	})
}
