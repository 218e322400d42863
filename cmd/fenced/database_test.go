package main

import "testing"

func TestRedactURL(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"postgres://u:pw@h:5432/db?sslmode=disable": "postgres://u:***@h:5432/db?sslmode=disable",
		"postgres://u@h/db":                         "postgres://u@h/db",
		"postgres://h/db?password=pw":               "postgres://h/db?password=***",
		"postgres://u:p%zz@h/db":                    "postgres://u:***@h/db",
		"sqlite:fenced.db":                          "sqlite:fenced.db",
		"sqlite:///var/lib/fenced.db":               "sqlite:///var/lib/fenced.db",
	} {
		if got := redactURL(in); got != want {
			t.Errorf("redactURL(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestScrub(t *testing.T) {
	t.Parallel()
	a := &app{db: "postgres://u:s3cr%40t@h/db"}
	got := a.scrub(`connect postgres://u:s3cr%40t@h/db: password "s3cr@t" rejected`)
	want := `connect postgres://u:***@h/db: password "***" rejected`
	if got != want {
		t.Errorf("scrub = %q, want %q", got, want)
	}
}
