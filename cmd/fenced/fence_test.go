package main

import "testing"

func TestFenceAdvanceEndsLeasesAndRaisesTheFloor(t *testing.T) {
	t.Parallel()
	eachDB(t, func(t *testing.T, c cli) {
		c.ok("lease", "acquire", "job", "--owner", "A")
		var adv struct {
			Floor int64 `json:"floor"`
		}
		c.json(&adv, "fence", "advance", "--by", "100", "--json")
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
		contains(t, "advance", c.ok("fence", "advance"), "new floor")
	})
}

func TestFenceAdvanceRejectsNegativeStep(t *testing.T) {
	t.Parallel()
	c := newCLI(t, "")
	c.db = "sqlite:" + t.TempDir() + "/fenced.db"
	c.fails(2, "fence", "advance", "--by", "-1")
}
