package main

import (
	"strconv"
	"testing"
	"time"
)

// leaseOutput is the --json form of a lease.
type leaseOutput struct {
	Name      string    `json:"name"`
	Owner     string    `json:"owner"`
	Fence     int64     `json:"fence"`
	ExpiresAt time.Time `json:"expires_at"`
	Held      bool      `json:"held"`
	Released  bool      `json:"released"`
	Advanced  bool      `json:"advanced"`
}

// showLease reads a lease with "lease show --json".
func showLease(c cli, name string) leaseOutput {
	c.t.Helper()
	var l leaseOutput
	c.json(&l, "lease", "show", name, "--json")
	return l
}

// waitNotHeld polls until the lease is no longer held by the database clock.
func waitNotHeld(t *testing.T, c cli, name string) {
	t.Helper()
	waitFor(t, "lease "+name+" to be no longer held", func() bool { return !showLease(c, name).Held })
}

func TestLeaseLifecycleJSON(t *testing.T) {
	t.Parallel()
	eachDB(t, func(t *testing.T, c cli) {
		var got leaseOutput
		c.json(&got, "lease", "acquire", "job", "--owner", "A", "--json")
		if got.Name != "job" || got.Owner != "A" || got.Fence != 1 || !got.Held || got.ExpiresAt.Location() != time.UTC {
			t.Fatalf("acquire: %+v, want job held by A with fence 1, UTC expiry", got)
		}
		if left := time.Until(got.ExpiresAt); left < 20*time.Second || left > 40*time.Second {
			t.Errorf("acquire: expires in %s, want about the default 30s", left)
		}

		var again leaseOutput
		c.json(&again, "lease", "acquire", "job", "--owner", "A", "--ttl", "1m", "--json")
		if again.Fence != 1 || !again.ExpiresAt.After(got.ExpiresAt) {
			t.Errorf("re-acquire by the holder: %+v, want fence 1 kept and expiry extended", again)
		}
		if shown := showLease(c, "job"); shown != again {
			t.Errorf("show: %+v, want %+v", shown, again)
		}

		var renewed leaseOutput
		c.json(&renewed, "lease", "renew", "job", "--owner", "A", "--fence", "1", "--ttl", "2m", "--json")
		if renewed.Fence != 1 || !renewed.Held || !renewed.ExpiresAt.After(again.ExpiresAt) {
			t.Errorf("renew: %+v, want fence 1 extended past %s", renewed, again.ExpiresAt)
		}

		c.ok("lease", "acquire", "other", "--owner", "B")
		var all []leaseOutput
		c.json(&all, "lease", "ls", "--json")
		if len(all) != 2 || all[0] != renewed || all[1].Name != "other" || all[1].Owner != "B" {
			t.Errorf("ls: %+v, want job then other", all)
		}

		var released leaseOutput
		c.json(&released, "lease", "release", "job", "--owner", "A", "--fence", "1", "--json")
		if released.Name != "job" || released.Owner != "A" || released.Fence != 1 || released.Held || released.ExpiresAt.IsZero() {
			t.Errorf("release: %+v, want job, owner A, fence 1, not held, with expires_at", released)
		}
		c.ok("lease", "release", "job", "--owner", "A", "--fence", "1") // idempotent
		if l := showLease(c, "job"); l.Held || l.Fence != 1 {
			t.Errorf("show after release: %+v, want fence 1 not held", l)
		}

		var next leaseOutput
		c.json(&next, "lease", "acquire", "job", "--owner", "B", "--json")
		if next.Fence != 2 || next.Owner != "B" {
			t.Errorf("acquire after release: %+v, want fence 2 for B", next)
		}
	})
}

func TestLeaseEmptyListIsJSONArray(t *testing.T) {
	t.Parallel()
	c := newCLI(t, "")
	c.db = "sqlite:" + t.TempDir() + "/fenced.db"
	c.ok("migrate") // the commands that only read do not migrate
	if out := c.ok("lease", "ls", "--json"); out != "[]\n" {
		t.Errorf("ls --json on an empty database: %q, want []", out)
	}
}

func TestLeaseHumanOutput(t *testing.T) {
	t.Parallel()
	eachDB(t, func(t *testing.T, c cli) {
		out := c.ok("lease", "acquire", "job", "--owner", "A")
		contains(t, "acquire", out, `acquired lease "job": owner "A", fence 1, expires `)
		out = c.ok("lease", "show", "job")
		contains(t, "show", out, "NAME")
		contains(t, "show", out, "held")
		c.ok("lease", "release", "job", "--owner", "A", "--fence", "1")
		out = c.ok("lease", "ls")
		contains(t, "ls", out, "HELD_UNTIL")
		contains(t, "ls", out, "released")
	})
}

func TestLeaseFlagsBeforeOrAfterArguments(t *testing.T) {
	t.Parallel()
	eachDB(t, func(t *testing.T, c cli) {
		c.ok("lease", "acquire", "after", "--owner", "A", "--ttl", "1m")
		c.ok("lease", "acquire", "--owner", "A", "--ttl", "1m", "before")
		c.ok("lease", "acquire", "--owner", "A", "middle", "--ttl=1m")
		noDB := c
		noDB.db = ""
		noDB.ok("lease", "acquire", "dbflag-last", "--owner", "A", "--db", c.db)
		noDB.ok("lease", "--db", c.db, "acquire", "dbflag-middle", "--owner", "A")
		for _, name := range []string{"after", "before", "middle", "dbflag-last", "dbflag-middle"} {
			if l := showLease(c, name); !l.Held || l.Owner != "A" {
				t.Errorf("%s: %+v, want held by A", name, l)
			}
		}
		var l leaseOutput
		c.json(&l, "lease", "renew", "--json", "--fence", "1", "after", "--owner", "A")
		if l.Fence != 1 {
			t.Errorf("renew with flags around the name: %+v", l)
		}
	})
}

func TestLeaseUsageErrorsExit2(t *testing.T) {
	t.Parallel()
	c := newCLI(t, "")
	c.db = "sqlite:" + t.TempDir() + "/fenced.db"
	c.ok("lease", "acquire", "job", "--owner", "A")
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"MissingOwner", []string{"lease", "acquire", "job"}, "--owner"},
		{"MissingOwnerOnRenew", []string{"lease", "renew", "job", "--fence", "1"}, "--owner"},
		{"MissingFenceOnRenew", []string{"lease", "renew", "job", "--owner", "A"}, "--fence"},
		{"MissingOwnerOnRelease", []string{"lease", "release", "job", "--fence", "1"}, "--owner"},
		{"EmptyOwner", []string{"lease", "acquire", "job", "--owner", ""}, "owner"},
		{"ZeroTTL", []string{"lease", "acquire", "job", "--owner", "A", "--ttl", "0"}, "ttl"},
		{"TTLOver24h", []string{"lease", "acquire", "job", "--owner", "A", "--ttl", "25h"}, "ttl"},
		{"TTLNotADuration", []string{"lease", "acquire", "job", "--owner", "A", "--ttl", "soon"}, "ttl"},
		{"NegativeFence", []string{"lease", "renew", "job", "--owner", "A", "--fence", "-1"}, "fence"},
		{"NegativeFenceOnRelease", []string{"lease", "release", "job", "--owner", "A", "--fence", "-1"}, "fence"},
		{"EmptyName", []string{"lease", "acquire", "", "--owner", "A"}, "name"},
		{"MissingName", []string{"lease", "acquire", "--owner", "A"}, "NAME"},
		{"TwoNames", []string{"lease", "acquire", "a", "b", "--owner", "A"}, "NAME"},
		{"ExtraArgumentToList", []string{"lease", "ls", "x"}, "received 1"},
		{"UnknownFlag", []string{"lease", "acquire", "job", "--owner", "A", "--nope"}, "--nope"},
		{"UnknownSubcommand", []string{"lease", "aquire", "job"}, "acquire"},
		{"UnknownCommand", []string{"leas"}, "did you mean lease"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := c.fails(2, tc.args...)
			contains(t, "stderr", r.stderr, tc.want)
		})
	}
	if l := showLease(c, "job"); l.Fence != 1 || l.Owner != "A" || !l.Held {
		t.Errorf("after rejected commands: %+v, want job still held by A with fence 1", l)
	}
}

func TestLeaseHeldByAnotherOwnerExit3(t *testing.T) {
	t.Parallel()
	eachDB(t, func(t *testing.T, c cli) {
		c.ok("lease", "acquire", "job", "--owner", "A")
		r := c.fails(3, "lease", "acquire", "job", "--owner", "B")
		contains(t, "stderr", r.stderr, `held by "A"`)
		if l := showLease(c, "job"); l.Owner != "A" || l.Fence != 1 {
			t.Errorf("after refused acquire: %+v, want A with fence 1", l)
		}
	})
}

func TestLeaseStaleAfterTakeoverExit4(t *testing.T) {
	t.Parallel()
	eachDB(t, func(t *testing.T, c cli) {
		c.ok("lease", "acquire", "job", "--owner", "A", "--ttl", "50ms")
		waitNotHeld(t, c, "job")
		// Expired, not yet taken over: renewing is stale too (re-acquire).
		r := c.fails(4, "lease", "renew", "job", "--owner", "A", "--fence", "1")
		contains(t, "stderr", r.stderr, "expired")

		var b leaseOutput
		c.json(&b, "lease", "acquire", "job", "--owner", "B", "--json")
		if b.Fence != 2 {
			t.Fatalf("takeover: %+v, want fence 2", b)
		}
		r = c.fails(4, "lease", "renew", "job", "--owner", "A", "--fence", "1")
		contains(t, "stderr", r.stderr, "stale fence")
		contains(t, "stderr", r.stderr, `held by "B"`)
		c.fails(4, "lease", "release", "job", "--owner", "A", "--fence", "1")
		if l := showLease(c, "job"); l.Owner != "B" || l.Fence != 2 || !l.Held {
			t.Errorf("after the stale writes: %+v, want B holding fence 2", l)
		}
	})
}

func TestLeaseNotFoundExit5(t *testing.T) {
	t.Parallel()
	eachDB(t, func(t *testing.T, c cli) {
		c.ok("migrate") // the commands that only read do not migrate
		r := c.fails(5, "lease", "show", "nope")
		contains(t, "stderr", r.stderr, `lease "nope" not found`)
		c.fails(5, "lease", "renew", "nope", "--owner", "A", "--fence", "1")
		c.fails(5, "lease", "release", "nope", "--owner", "A", "--fence", strconv.Itoa(1))
	})
}
