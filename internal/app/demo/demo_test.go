package demo_test

import (
	"context"
	"fmt"
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/fenced/fenced/internal/app/demo"
	"github.com/fenced/fenced/internal/lib/display"
	"github.com/fenced/fenced/internal/test/testdb"
)

// TestMain lets this test binary act as the demo's worker process.
func TestMain(m *testing.M) {
	if len(os.Args) > 1 && os.Args[1] == "demo-worker" {
		os.Exit(demo.Worker(context.Background(), os.Args[2:]))
	}
	os.Exit(m.Run())
}

// runDemo runs the named scenarios (all when none) on url and fails the
// test unless every step went as expected.
func runDemo(t *testing.T, url string, names ...string) string {
	t.Helper()
	var out strings.Builder
	ok, err := demo.Run(context.Background(), demo.Options{URL: url, Out: &out}, names...)
	t.Log("\n" + out.String())
	if err != nil || !ok {
		t.Fatalf("demo: ok=%v err=%v", ok, err)
	}
	if strings.Contains(out.String(), "MISMATCH") {
		t.Error("a step mismatched")
	}
	for _, n := range names {
		if !strings.Contains(out.String(), n+": every step as expected") {
			t.Errorf("output lacks %q", n+": every step as expected")
		}
	}
	lines := strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n")
	for _, line := range lines {
		if display.Width(line) > demo.Width {
			t.Errorf("line wider than %d columns: %q", demo.Width, line)
		}
	}
	scenarios := "scenarios"
	if len(names) == 1 {
		scenarios = "scenario"
	}
	if want := fmt.Sprintf(`^%d %s on (sqlite|postgres|mysql): all as expected$`, len(names), scenarios); !regexp.MustCompile(want).MatchString(lines[len(lines)-1]) {
		t.Errorf("last line %q, want the summary %s", lines[len(lines)-1], want)
	}
	return out.String()
}

// backends give each run a database of its own.
var backends = map[string]func(testing.TB) string{
	"SQLite":   testdb.SQLite,
	"Postgres": testdb.Postgres,
	"MariaDB":  testdb.MySQL,
}

func TestEveryScenarioAloneOnEachBackend(t *testing.T) {
	t.Parallel()
	for _, name := range demo.Names() {
		for backend, url := range backends {
			t.Run(name+"/"+backend, func(t *testing.T) {
				t.Parallel()
				runDemo(t, url(t), name)
			})
		}
	}
}

func TestDemoOnSQLite(t *testing.T) {
	t.Parallel()
	out := runDemo(t, "", demo.Names()...) // all of them in one temporary SQLite file
	for _, want := range []string{
		"rejected: stale (current fence 2)",
		"told: A and B; row: running, owner B",
		"waits for the write lock, then finds nothing",
		"rejected: stale (superseded, current fence 2, held by W2)",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q", want)
		}
	}
}

// TestDemoOnServers runs every scenario in one database of each server,
// and checks what only a server with row locks shows.
func TestDemoOnServers(t *testing.T) {
	t.Parallel()
	for name, c := range map[string]struct {
		url  func(testing.TB) string
		want []string
	}{
		"Postgres": {testdb.Postgres, []string{"waiting on Lock"}},
		"MariaDB":  {testdb.MySQL, []string{"waiting on Lock (InnoDB lock wait"}},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			out := runDemo(t, c.url(t), demo.Names()...)
			for _, want := range append(c.want,
				"the other skips the locked row: nothing, at once",
				"rejected: stale (superseded, current fence 2, held by W2)") {
				if !strings.Contains(out, want) {
					t.Errorf("output lacks %q", want)
				}
			}
		})
	}
}

func TestUnknownDemoIsAnError(t *testing.T) {
	_, err := demo.Run(context.Background(), demo.Options{Out: &strings.Builder{}}, "nope")
	if err == nil || !strings.Contains(err.Error(), "stale-writer") || !strings.Contains(err.Error(), "claim-race") {
		t.Fatalf("err = %v", err)
	}
}
