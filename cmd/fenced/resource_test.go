package main

import (
	"testing"
	"time"
)

// writeOutput is the --json form of a resource write.
type writeOutput struct {
	Key      string `json:"key"`
	Fence    int64  `json:"fence"`
	Version  int64  `json:"version"`
	Replayed bool   `json:"replayed"`
}

// resourceOutput is the --json form of a resource.
type resourceOutput struct {
	Key       string    `json:"key"`
	Value     string    `json:"value"`
	Fence     int64     `json:"fence"`
	Version   int64     `json:"version"`
	UpdatedAt time.Time `json:"updated_at"`
}

func TestResourceWriteAndShow(t *testing.T) {
	t.Parallel()
	eachDB(t, func(t *testing.T, c cli) {
		var w writeOutput
		c.json(&w, "resource", "write", "invoice", "--fence", "3", "--value", "draft", "--json")
		if w != (writeOutput{Key: "invoice", Fence: 3, Version: 1}) {
			t.Errorf("first write: %+v", w)
		}
		c.json(&w, "resource", "write", "--fence", "3", "invoice", "--value", "sent", "--json")
		if w.Version != 2 || w.Fence != 3 {
			t.Errorf("write with the same fence: %+v, want version 2", w)
		}
		var r resourceOutput
		c.json(&r, "resource", "show", "invoice", "--json")
		if r.Key != "invoice" || r.Value != "sent" || r.Fence != 3 || r.Version != 2 || r.UpdatedAt.IsZero() || r.UpdatedAt.Location() != time.UTC {
			t.Errorf("show: %+v", r)
		}
		out := c.ok("resource", "show", "invoice")
		contains(t, "show", out, "sent")
		contains(t, "show", out, "version:")
		out = c.ok("resource", "write", "invoice", "--fence", "4", "--value", "")
		contains(t, "write", out, `wrote resource "invoice": fence 4, version 3`)
	})
}

func TestResourceStaleWriteExit4(t *testing.T) {
	t.Parallel()
	eachDB(t, func(t *testing.T, c cli) {
		c.ok("resource", "write", "k", "--fence", "5", "--value", "new")
		res := c.fails(4, "resource", "write", "k", "--fence", "4", "--value", "old")
		contains(t, "stderr", res.stderr, "stale fence")
		var r resourceOutput
		c.json(&r, "resource", "show", "k", "--json")
		if r.Value != "new" || r.Fence != 5 || r.Version != 1 {
			t.Errorf("after the stale write: %+v, want the fence-5 value untouched", r)
		}
	})
}

func TestResourceOperationReplay(t *testing.T) {
	t.Parallel()
	eachDB(t, func(t *testing.T, c cli) {
		var first, again writeOutput
		c.json(&first, "resource", "write", "k", "--fence", "1", "--value", "a", "--op", "op-1", "--json")
		c.json(&again, "resource", "write", "k", "--fence", "1", "--value", "a", "--op", "op-1", "--json")
		if first.Replayed || !again.Replayed || again.Version != first.Version || again.Fence != first.Fence {
			t.Errorf("replay: first %+v, again %+v; want the first outcome, replayed", first, again)
		}
		out := c.ok("resource", "write", "k", "--fence", "1", "--value", "a", "--op", "op-1")
		contains(t, "write", out, "replayed")
		// The same operation id for another value is refused (exit 2).
		res := c.fails(2, "resource", "write", "k", "--fence", "1", "--value", "b", "--op", "op-1")
		contains(t, "stderr", res.stderr, "another fence or value")
		var r resourceOutput
		c.json(&r, "resource", "show", "k", "--json")
		if r.Value != "a" || r.Version != 1 {
			t.Errorf("after replays: %+v, want value a, version 1", r)
		}
	})
}

func TestResourceErrors(t *testing.T) {
	t.Parallel()
	c := newCLI(t, "")
	c.db = "sqlite:" + t.TempDir() + "/fenced.db"
	c.fails(5, "resource", "show", "missing")
	c.fails(2, "resource", "write", "k", "--fence", "-1", "--value", "v")
	c.fails(2, "resource", "write", "k", "--value", "v")
	c.fails(2, "resource", "write", "k", "--fence", "1")
	c.fails(2, "resource", "write", "", "--fence", "1", "--value", "v")
	c.fails(2, "resource", "show")
}
