package main

import (
	"strings"
	"testing"
)

func TestMigrateIsIdempotent(t *testing.T) {
	t.Parallel()
	eachDB(t, func(t *testing.T, c cli) {
		out := c.ok("migrate")
		if !strings.HasPrefix(out, "applied migration 1\n") {
			t.Errorf("first migrate: %q, want the applied versions", out)
		}
		if out := c.ok("migrate"); out != "up to date\n" {
			t.Errorf("second migrate: %q, want up to date", out)
		}
		if out := c.ok("migrate", "--json"); out != `{"applied":[]}`+"\n" {
			t.Errorf("migrate --json: %q", out)
		}
	})
}

func TestCommandsMigrateOnFirstUse(t *testing.T) {
	t.Parallel()
	eachDB(t, func(t *testing.T, c cli) {
		c.ok("lease", "ls")
		if out := c.ok("migrate"); out != "up to date\n" {
			t.Errorf("migrate after first use: %q, want up to date", out)
		}
	})
}
