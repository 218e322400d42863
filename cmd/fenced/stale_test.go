package main

import "testing"

// TestStaleMessagesNameTheCause: a refused renewal says what is wrong with
// the fence given, not "superseded" for a fence that is current (another
// owner's) or was never granted.
func TestStaleMessagesNameTheCause(t *testing.T) {
	t.Parallel()
	eachDB(t, func(t *testing.T, c cli) {
		c.ok("lease", "acquire", "report", "--owner", "w1", "--ttl", "5m")
		for _, tc := range []struct {
			owner, fence, want string
		}{
			{"w2", "1", `fenced: stale fence: lease "report" fence 1 is held by "w1", not "w2"` + "\n"},
			{"w1", "2", `fenced: stale fence: lease "report" fence 2 was never granted: the current fence is 1 (held by "w1")` + "\n"},
		} {
			r := c.fails(exitStale, "lease", "renew", "report", "--owner", tc.owner, "--fence", tc.fence)
			if r.stderr != tc.want {
				t.Errorf("renew by %s with fence %s:\n got %q\nwant %q", tc.owner, tc.fence, r.stderr, tc.want)
			}
		}
	})
}
