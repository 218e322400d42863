package main

import (
	"os"
	"path/filepath"
	"testing"
	"time"
)

// slotOutput is the --json form of a slot grant.
type slotOutput struct {
	Name      string    `json:"name"`
	Slot      int       `json:"slot"`
	Owner     string    `json:"owner"`
	Fence     int64     `json:"fence"`
	ExpiresAt time.Time `json:"expires_at"`
	Held      bool      `json:"held"`
	Released  bool      `json:"released"`
}

// semaphoreOutput is the --json form of a semaphore.
type semaphoreOutput struct {
	Name    string       `json:"name"`
	Slots   int          `json:"slots"`
	Fence   int64        `json:"fence"`
	Holders []slotOutput `json:"holders"`
}

func TestSemaphoreLifecycleJSON(t *testing.T) {
	t.Parallel()
	eachDB(t, func(t *testing.T, c cli) {
		var a, b, again slotOutput
		c.json(&a, "semaphore", "acquire", "enc", "--slots", "2", "--owner", "A", "--json")
		if a.Name != "enc" || a.Slot != 0 || a.Owner != "A" || a.Fence != 1 || !a.Held || a.ExpiresAt.Location() != time.UTC {
			t.Fatalf("acquire: %+v, want slot 0 of enc held by A with fence 1, UTC expiry", a)
		}
		c.json(&b, "semaphore", "acquire", "enc", "--slots", "2", "--owner", "B", "--ttl", "1m", "--json")
		if b.Slot != 1 || b.Fence != 2 {
			t.Fatalf("second acquire: %+v, want slot 1 fence 2", b)
		}
		c.json(&again, "semaphore", "acquire", "enc", "--slots", "2", "--owner", "A", "--ttl", "1m", "--json")
		if again.Slot != 0 || again.Fence != 1 || !again.ExpiresAt.After(a.ExpiresAt) {
			t.Errorf("re-acquire by the holder: %+v, want slot 0 fence 1 extended", again)
		}
		r := c.fails(exitHeld, "semaphore", "acquire", "enc", "--slots", "2", "--owner", "C")
		contains(t, "stderr", r.stderr, "all 2 slots held")

		var renewed slotOutput
		c.json(&renewed, "semaphore", "renew", "enc", "--owner", "B", "--fence", "2", "--ttl", "2m", "--json")
		if renewed.Fence != 2 || renewed.Slot != 1 || !renewed.ExpiresAt.After(b.ExpiresAt) {
			t.Errorf("renew: %+v, want fence 2 extended past %s", renewed, b.ExpiresAt)
		}
		c.fails(exitStale, "semaphore", "renew", "enc", "--owner", "C", "--fence", "2")
		c.fails(exitStale, "semaphore", "release", "enc", "--owner", "A", "--fence", "3")

		var shown semaphoreOutput
		c.json(&shown, "semaphore", "show", "enc", "--json")
		if shown.Name != "enc" || shown.Slots != 2 || shown.Fence != 2 || len(shown.Holders) != 2 ||
			shown.Holders[0].Owner != "A" || shown.Holders[1] != renewed {
			t.Errorf("show: %+v", shown)
		}

		var released slotOutput
		c.json(&released, "semaphore", "release", "enc", "--owner", "A", "--fence", "1", "--json")
		if released.Held || !released.Released || released.Fence != 1 {
			t.Errorf("release: %+v", released)
		}
		c.ok("semaphore", "release", "enc", "--owner", "A", "--fence", "1") // idempotent
		var next slotOutput
		c.json(&next, "semaphore", "acquire", "enc", "--slots", "2", "--owner", "C", "--json")
		if next.Slot != 0 || next.Fence != 3 {
			t.Errorf("acquire after release: %+v, want slot 0 fence 3", next)
		}

		var all []semaphoreOutput
		c.json(&all, "semaphore", "ls", "--json")
		if len(all) != 1 || len(all[0].Holders) != 2 || all[0].Fence != 3 {
			t.Errorf("ls: %+v", all)
		}
		table := c.ok("semaphore", "ls")
		contains(t, "ls", table, "LAST_FENCE")
		contains(t, "ls", table, "enc")
	})
}

func TestSemaphoreRefusals(t *testing.T) {
	t.Parallel()
	c := newCLI(t, "")
	c.fails(exitUsage, "semaphore", "acquire", "enc", "--owner", "A")                 // no --slots
	c.fails(exitUsage, "semaphore", "acquire", "enc", "--slots", "0", "--owner", "A") // out of range
	c.fails(exitUsage, "semaphore", "acquire", "enc", "--slots", "2", "--owner", "")  // empty owner
	c.fails(exitUsage, "semaphore", "renew", "enc", "--owner", "A", "--fence", "-1")  // negative fence
	c.fails(exitUsage, "semaphore", "release", "enc", "--owner", "A")                 // no --fence
	if _, err := os.Stat(filepath.Join(c.dir, "fenced.db")); !os.IsNotExist(err) {
		t.Errorf("refused input touched the database (stat: %v)", err)
	}
	eachDB(t, func(t *testing.T, c cli) {
		c.ok("migrate") // the commands that only read do not migrate
		r := c.fails(exitNotFound, "semaphore", "show", "ghost")
		contains(t, "stderr", r.stderr, `semaphore "ghost" not found`)
		c.fails(exitNotFound, "semaphore", "renew", "ghost", "--owner", "A", "--fence", "1")
	})
}
