package main

import (
	"fmt"
	"testing"

	"github.com/fenced/fenced"
)

// TestJobSlots: "job slots" lists each concurrency key with due jobs, with
// its limit, of one queue or of all, as a table or JSON.
func TestJobSlots(t *testing.T) {
	t.Parallel()
	eachDB(t, func(t *testing.T, c cli) {
		c.ok("job", "limit", "set", "--queue", "mail", "--per-key", "2")
		c.ok("job", "enqueue", "send", "--queue", "mail", "--concurrency-key", "ann")
		c.ok("job", "enqueue", "send", "--queue", "mail", "--concurrency-key", "ann")
		c.ok("job", "enqueue", "send", "--queue", "other", "--concurrency-key", "bob")
		c.ok("job", "enqueue", "send", "--queue", "mail")

		var ks []fenced.KeySlots
		c.json(&ks, "job", "slots", "--json")
		want := []fenced.KeySlots{{Queue: "mail", ConcurrencyKey: "ann", Limit: 2, Waiting: 2},
			{Queue: "other", ConcurrencyKey: "bob", Waiting: 1}}
		if fmt.Sprint(ks) != fmt.Sprint(want) {
			t.Fatalf("slots --json = %+v, want %+v", ks, want)
		}
		c.json(&ks, "job", "slots", "--queue", "other", "--json")
		if fmt.Sprint(ks) != fmt.Sprint(want[1:]) {
			t.Fatalf("slots --queue other = %+v", ks)
		}
		out := c.ok("job", "slots")
		contains(t, "table", out, "HELD_BACK")
		contains(t, "table", out, "ann")
		c.json(&ks, "job", "slots", "--queue", "none", "--json")
		if len(ks) != 0 {
			t.Fatalf("slots of an empty queue = %+v", ks)
		}
		c.fails(2, "job", "slots", "--queue", "")
		c.fails(2, "job", "slots", "--queue", "a b")
	})
}
