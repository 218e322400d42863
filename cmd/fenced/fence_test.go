package main

import (
	"regexp"
	"strings"
	"testing"

	"github.com/fenced/fenced/internal/test/testdb"
)

func TestFenceAdvanceEndsLeasesAndRaisesTheFloor(t *testing.T) {
	t.Parallel()
	eachDB(t, func(t *testing.T, c cli) {
		c.ok("lease", "acquire", "job", "--owner", "A")
		var adv struct {
			Floor int64 `json:"floor"`
		}
		c.json(&adv, "fence", "advance", "--by", "100", "--yes", "--json")
		if adv.Floor < 101 {
			t.Fatalf("floor %d, want at least 101", adv.Floor)
		}
		if l := showLease(c, "job"); l.Held {
			t.Errorf("after advance: %+v, want the lease ended", l)
		}
		c.fails(4, "lease", "renew", "job", "--owner", "A", "--fence", "1")
		var l leaseOutput
		c.json(&l, "lease", "acquire", "job", "--owner", "A", "--json")
		if l.Fence <= adv.Floor {
			t.Errorf("fence after advance %d, want above the floor %d", l.Fence, adv.Floor)
		}
		c.json(&l, "lease", "acquire", "fresh", "--owner", "A", "--json")
		if l.Fence <= adv.Floor {
			t.Errorf("fence of a new name %d, want above the floor %d", l.Fence, adv.Floor)
		}
		contains(t, "advance", c.ok("fence", "advance", "--yes"), "new floor")
	})
}

// After a release and after an advance, "lease ls" shows each lease for
// what it is: a released one until when it was held, an advanced one with
// the floor as its fence beside no owner, and a note that says so; the
// help says that jobs jump too.
func TestFenceAdvanceShowsAdvancedLeases(t *testing.T) {
	t.Parallel()
	eachDB(t, func(t *testing.T, c cli) {
		c.ok("lease", "acquire", "job", "--owner", "A")
		out := c.ok("lease", "release", "job", "--owner", "A", "--fence", "1")
		if !strings.HasPrefix(out, `released lease "job": owner "A", fence 1, held until `) || strings.Contains(out, "expires") {
			t.Errorf("release printed %q", out)
		}
		if out := c.ok("lease", "ls"); strings.Contains(out, "advanced") || !strings.Contains(out, " A ") {
			t.Errorf("ls after a release:\n%s", out)
		}
		c.ok("lease", "acquire", "other", "--owner", "B")
		out = c.ok("fence", "advance", "--by", "100", "--yes")
		contains(t, "advance", out, "new floor 101;")
		contains(t, "advance", out, "job fences moved up and job ids skip ahead by 100")
		out = c.ok("lease", "ls")
		for _, name := range []string{"job", "other"} {
			want := regexp.MustCompile(`(?m)^` + name + ` +- +101 +advanced +-$`)
			if !want.MatchString(out) {
				t.Errorf("ls after the advance, %s not shown as advanced:\n%s", name, out)
			}
		}
		if strings.Contains(out, " A ") || strings.Contains(out, " B ") {
			t.Errorf("ls after the advance shows an old owner beside the floor:\n%s", out)
		}
		contains(t, "ls", out, "advanced: a fence advance ended the lease; FENCE is the floor it set")
		var l leaseOutput
		c.json(&l, "lease", "show", "job", "--json")
		if !l.Advanced || !l.Released || l.Fence != 101 {
			t.Errorf("show --json after the advance: %+v", l)
		}
		c.ok("lease", "acquire", "job", "--owner", "C")
		out = c.ok("lease", "ls")
		if !regexp.MustCompile(`(?m)^job +C +102 +held `).MatchString(out) {
			t.Errorf("ls after a new grant:\n%s", out)
		}
		help := c.ok("fence", "advance", "--help")
		for _, want := range []string{"every job's fence moves up by --by", "job ids skip --by ahead"} {
			contains(t, "help", oneLine(help), want)
		}
	})
}

func TestFenceAdvanceRejectsNegativeStep(t *testing.T) {
	t.Parallel()
	c := newCLI(t, "")
	c.db = "sqlite:" + t.TempDir() + "/fenced.db"
	c.fails(2, "fence", "advance", "--by", "-1")
}

// Off a terminal, fence advance needs --yes: without it, it refuses as a
// usage error and every lease stays held.
func TestFenceAdvanceOffATerminalNeedsYes(t *testing.T) {
	t.Parallel()
	c := newCLI(t, testdb.SQLite(t))
	c.ok("lease", "acquire", "job", "--owner", "A")
	r := c.fails(2, "fence", "advance")
	contains(t, "refusal", r.stderr, "pass --yes to run it when stdin is not a terminal")
	if l := showLease(c, "job"); !l.Held || l.Fence != 1 {
		t.Fatalf("after the refusal: %+v, want the lease held at fence 1", l)
	}
	c.ok("fence", "advance", "--yes")
	if l := showLease(c, "job"); l.Held {
		t.Fatalf("after advance --yes: %+v, want the lease ended", l)
	}
}
