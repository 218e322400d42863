package main

import (
	"testing"

	"github.com/fenced/fenced"
)

// TestJobLimits: "job limit set|ls|rm" declare, list and delete limits per
// scope; "job enqueue" carries the keys to the job, and "job ls" and
// "job show" show them.
func TestJobLimits(t *testing.T) {
	t.Parallel()
	eachDB(t, func(t *testing.T, c cli) {
		out := c.ok("job", "limit", "set", "--queue", "mail", "--per-key", "2", "--global", "10")
		contains(t, "set", out, "per key 2, global 10")
		c.ok("job", "limit", "set", "--queue", "mail", "--kind", "news", "--per-key", "1")
		var got fenced.JobLimit
		c.json(&got, "job", "limit", "set", "--queue", "mail", "--key", "vip", "--per-key", "5", "--json")
		if got != (fenced.JobLimit{Queue: "mail", ConcurrencyKey: "vip", PerKey: 5}) {
			t.Fatalf("set --json = %+v", got)
		}
		c.fails(2, "job", "limit", "set", "--queue", "mail", "--key", "vip", "--per-key", "5", "--global", "1")
		c.fails(2, "job", "limit", "set", "--queue", "mail", "--per-key", "-1")
		c.fails(2, "job", "limit", "set", "--queue", "mail", "--kind", "")
		// Neither limit given would replace the limit with none: refused.
		contains(t, "set without a limit", c.fails(2, "job", "limit", "set", "--queue", "mail").stderr, "give --per-key, --global or both")
		// The queue is a flag, as in every job command.
		for _, args := range [][]string{{"set", "mail", "--per-key", "1"}, {"ls", "mail"}, {"rm", "mail"}} {
			contains(t, args[0]+" QUEUE", c.fails(2, append([]string{"job", "limit"}, args...)...).stderr, "--queue mail")
		}
		c.fails(2, "job", "limit", "ls", "--queue", "")
		c.ok("job", "limit", "set", "--global", "3") // the default queue's

		var ls []fenced.JobLimit
		c.json(&ls, "job", "limit", "ls", "--queue", "mail", "--json")
		if len(ls) != 3 || ls[1].ConcurrencyKey != "vip" || ls[2].Kind != "news" {
			t.Fatalf("ls --json = %+v", ls)
		}
		contains(t, "ls", c.ok("job", "limit", "ls"), "PER_KEY")

		c.ok("job", "limit", "rm", "--queue", "mail", "--key", "vip")
		c.fails(5, "job", "limit", "rm", "--queue", "mail", "--key", "vip")
		c.json(&ls, "job", "limit", "ls", "--json")
		if len(ls) != 3 || ls[0].Queue != fenced.DefaultQueue || ls[0].Global != 3 {
			t.Fatalf("ls after rm = %+v", ls)
		}

		var j struct {
			ID             int64  `json:"id"`
			ConcurrencyKey string `json:"concurrency_key"`
			SequenceKey    string `json:"sequence_key"`
		}
		c.json(&j, "job", "enqueue", "send", "--queue", "mail", "--concurrency-key", "ann", "--sequence-key", "inbox", "--json")
		if j.ConcurrencyKey != "ann" || j.SequenceKey != "inbox" {
			t.Fatalf("enqueued %+v", j)
		}
		c.fails(2, "job", "enqueue", "send", "--concurrency-key", "")
		c.fails(2, "job", "enqueue", "send", "--sequence-continue-on-failed")
		list := c.ok("job", "ls", "--queue", "mail")
		contains(t, "ls", list, "CONCURRENCY_KEY")
		contains(t, "ls", list, "inbox")
		contains(t, "show", c.ok("job", "show", "1"), "concurrency_key:")
	})
}
