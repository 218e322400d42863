package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/fenced/fenced/internal/test/testdb"
)

// The Python client package of clients/python, installed as a user would
// (pip install into a fresh virtual environment, with no package index:
// its build backend needs only the standard library), runs its unittest
// suite against a real "fenced serve" on SQLite: leases and a stale renew
// after a takeover, fenced resource writes, the job API, a stale completion
// after a takeover, and its worker (kinds, heartbeats, a stale attempt
// stopping its handler, a cancel).
func TestPythonClient(t *testing.T) {
	t.Parallel()
	py := python3(t)
	pkg, err := filepath.Abs(filepath.Join("..", "..", "clients", "python"))
	if err != nil {
		t.Fatal(err)
	}
	missing := func(format string, args ...any) {
		t.Helper()
		if os.Getenv("CI") == "true" {
			t.Fatalf(format, args...)
		}
		t.Skipf(format, args...)
	}

	venv := filepath.Join(t.TempDir(), "venv")
	if r := runInterpreter(t, py, nil, "-m", "venv", venv); r.code != 0 {
		missing("python3 -m venv (with ensurepip) is required: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	vpy := filepath.Join(venv, "bin", "python")
	// PIP_NO_INDEX: the install must need nothing from a package index.
	offline := []string{"PIP_NO_INDEX=1", "PIP_DISABLE_PIP_VERSION_CHECK=1", "PIP_NO_INPUT=1"}
	if r := runInterpreter(t, vpy, offline, "-m", "pip", "install", pkg); r.code != 0 {
		t.Fatalf("pip install %s: exit %d\nstdout: %s\nstderr: %s", pkg, r.code, r.stdout, r.stderr)
	}
	r := runInterpreter(t, vpy, nil, "-c", "import fenced_client; print(fenced_client.__file__)")
	if r.code != 0 || !strings.HasPrefix(strings.TrimSpace(r.stdout), venv) {
		t.Fatalf("fenced_client is not imported from the virtual environment: exit %d\nstdout: %s\nstderr: %s", r.code, r.stdout, r.stderr)
	}

	// One version: pyproject.toml's, the installed distribution's and
	// fenced_client.__version__.
	toml, err := os.ReadFile(filepath.Join(pkg, "pyproject.toml"))
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^version = "([^"]+)"$`).FindSubmatch(toml)
	if m == nil {
		t.Fatal("pyproject.toml declares no version")
	}
	r = runInterpreter(t, vpy, nil, "-c",
		"import importlib.metadata as m, fenced_client; print(m.version('fenced-client'), fenced_client.__version__)")
	if want := string(m[1]) + " " + string(m[1]); r.code != 0 || strings.TrimSpace(r.stdout) != want {
		t.Fatalf("versions (installed, __version__) = %q, exit %d, want %q\nstderr: %s", r.stdout, r.code, want, r.stderr)
	}

	s := newCLI(t, testdb.SQLite(t)).serve()
	r = runInterpreter(t, vpy, []string{"FENCED_URL=" + s.base},
		"-m", "unittest", "discover", "-s", filepath.Join(pkg, "tests"), "-v")
	ran := regexp.MustCompile(`(?m)^Ran (\d+) tests? in [0-9.]+s`).FindStringSubmatch(r.stderr)
	if r.code != 0 || ran == nil || ran[1] == "0" || !strings.Contains(r.stderr, "\nOK\n") || strings.Contains(r.stderr, "skipped") {
		t.Fatalf("the client's tests: exit %d, want 0 with every test run and none skipped\nstdout: %s\nstderr: %s\nserver: %s",
			r.code, r.stdout, r.stderr, s.stderr)
	}
	t.Logf("the client's tests: %s", ran[0])
	s.stop()
}
