package demo_test

import (
	"context"
	"os"
	"strings"
	"testing"

	"github.com/fenced/fenced/internal/demo"
	"github.com/fenced/fenced/internal/testdb"
)

// TestMain lets this test binary act as the demo's worker process.
func TestMain(m *testing.M) {
	if len(os.Args) > 1 && os.Args[1] == "demo-worker" {
		os.Exit(demo.Worker(context.Background(), os.Args[2:]))
	}
	os.Exit(m.Run())
}

func runDemo(t *testing.T, url string) string {
	t.Helper()
	var out strings.Builder
	ok, err := demo.Run(context.Background(), demo.Options{URL: url, Out: &out})
	t.Log("\n" + out.String())
	if err != nil || !ok {
		t.Fatalf("demo: ok=%v err=%v", ok, err)
	}
	return out.String()
}

func TestDemoOnSQLite(t *testing.T) {
	t.Parallel()
	out := runDemo(t, "") // its own temporary SQLite file
	for _, want := range []string{"rejected: stale (current fence 2)", "every step as expected"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q", want)
		}
	}
	if strings.Contains(out, "MISMATCH") {
		t.Error("a step mismatched")
	}
}

func TestDemoOnPostgres(t *testing.T) {
	t.Parallel()
	runDemo(t, testdb.Postgres(t))
}

func TestUnknownDemoIsAnError(t *testing.T) {
	_, err := demo.Run(context.Background(), demo.Options{Out: &strings.Builder{}}, "nope")
	if err == nil || !strings.Contains(err.Error(), "stale-writer") {
		t.Fatalf("err = %v", err)
	}
}
