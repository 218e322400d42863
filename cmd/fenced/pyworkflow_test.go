package main

import (
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/fenced/fenced/internal/test/testdb"
)

// TestPythonClientWorkflows runs the Python client's workflow tests
// (clients/python/tests/test_workflows.py) against a real "fenced serve"
// on PostgreSQL, the backend with workflows today, with FENCED_WORKFLOWS=1
// so that none of them may take the path of a server without workflows.
// (TestPythonClient runs them on SQLite too, with every other test of the
// client.) The package is imported from its source directory: its
// installation is TestPythonClient's.
func TestPythonClientWorkflows(t *testing.T) {
	t.Parallel()
	py := python3(t)
	pkg, err := filepath.Abs(filepath.Join("..", "..", "clients", "python"))
	if err != nil {
		t.Fatal(err)
	}
	s := newCLI(t, testdb.Postgres(t)).serve()
	r := runInterpreter(t, py, []string{"FENCED_URL=" + s.base, "FENCED_WORKFLOWS=1", "PYTHONPATH=" + pkg},
		"-m", "unittest", "discover", "-s", filepath.Join(pkg, "tests"), "-p", "test_workflows.py", "-v")
	ran := regexp.MustCompile(`(?m)^Ran (\d+) tests? in [0-9.]+s`).FindStringSubmatch(r.stderr)
	if r.code != 0 || ran == nil || ran[1] == "0" || !strings.Contains(r.stderr, "\nOK\n") || strings.Contains(r.stderr, "skipped") {
		t.Fatalf("the client's workflow tests: exit %d, want 0 with every test run and none skipped\nstdout: %s\nstderr: %s\nserver: %s",
			r.code, r.stdout, r.stderr, s.stderr)
	}
	t.Logf("the client's workflow tests: %s", ran[0])
	s.stop()
}
