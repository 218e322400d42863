package main

import (
	"strings"
	"testing"
)

// fenced job enqueue --tag tags a job; fenced job ls --tag lists the jobs
// carrying any of the tags, or all of them with --all-tags; a bad tag, at
// enqueue or in the filter, is refused (exit 2, invalid input) and nothing
// is written; --all-tags without --tag is a usage error.
func TestJobTagsInTheCLI(t *testing.T) {
	t.Parallel()
	eachDB(t, func(t *testing.T, c cli) {
		c.ok("migrate")
		var ab struct {
			ID   int64    `json:"id"`
			Tags []string `json:"tags"`
		}
		c.json(&ab, "job", "enqueue", "k", "--tag", "a", "--tag", "b", "--json")
		if strings.Join(ab.Tags, " ") != "a b" {
			t.Fatalf("enqueued tags %q", ab.Tags)
		}
		a := enqueue(c, "k", "--tag", "a")
		enqueue(c, "k")
		ids := func(args ...string) []int64 {
			t.Helper()
			var jobs []jobOutput
			c.json(&jobs, append([]string{"job", "ls", "--json"}, args...)...)
			out := []int64{}
			for _, j := range jobs {
				out = append(out, j.ID)
			}
			return out
		}
		if got := ids("--tag", "a"); !equalIDs(got, []int64{ab.ID, a.ID}) {
			t.Errorf("ls --tag a: %v", got)
		}
		if got := ids("--tag", "a", "--tag", "b", "--all-tags"); !equalIDs(got, []int64{ab.ID}) {
			t.Errorf("ls --tag a --tag b --all-tags: %v", got)
		}
		if got := ids("--tag", "b", "--tag", "zz"); !equalIDs(got, []int64{ab.ID}) {
			t.Errorf("ls --tag b --tag zz: %v", got)
		}
		for _, bad := range [][]string{{"--tag", "a,b"}, {"--tag", ""}, {"--tag", "x", "--tag", "x"}, {"--tag", strings.Repeat("t", 101)}} {
			r := c.fails(2, append([]string{"job", "enqueue", "k"}, bad...)...)
			contains(t, "enqueue "+strings.Join(bad, " "), r.stderr, "tags")
			c.fails(2, append([]string{"job", "ls"}, bad...)...)
		}
		contains(t, "--all-tags alone", c.fails(2, "job", "ls", "--all-tags").stderr, "--tag")
		if got := ids(); len(got) != 3 {
			t.Fatalf("%d jobs after the refused enqueues, want 3", len(got))
		}
	})
}
