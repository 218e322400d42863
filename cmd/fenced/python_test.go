package main

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/fenced/fenced/internal/test/logbuf"
)

// The helpers of the tests that run Python against a real "fenced serve":
// the example worker (pyworker_test.go) and the client package
// (pyclient_test.go).

// python3 finds the interpreter: the test is skipped without one, except
// under CI=true where that fails it.
func python3(t *testing.T) string {
	t.Helper()
	py, err := exec.LookPath("python3")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("python3 is required under CI=true: %v", err)
		}
		t.Skipf("python3 not found: %v", err)
	}
	return py
}

// pyRun is one run of python3 with args and the environment env (besides
// this process's): its stdout, stderr and exit code.
type pyRun struct {
	stdout, stderr string
	code           int
}

// runPython runs python3 with args in a temporary directory and returns
// how it went; it must end within a minute.
func runPython(t *testing.T, env []string, args ...string) pyRun {
	t.Helper()
	return runInterpreter(t, python3(t), env, args...)
}

// runInterpreter runs the Python interpreter py (python3, or a virtual
// environment's) as runPython does.
func runInterpreter(t *testing.T, py string, env []string, args ...string) pyRun {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, py, args...)
	cmd.Dir = t.TempDir() // no __pycache__ next to the script
	cmd.Env = append(os.Environ(), "PYTHONDONTWRITEBYTECODE=1", "FENCED_TOKEN=", "FENCED_URL=")
	cmd.Env = append(cmd.Env, env...)
	var stderr logbuf.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	var exit *exec.ExitError
	switch {
	case ctx.Err() != nil:
		t.Fatalf("%s %s did not end within a minute\nstdout: %s\nstderr: %s", py, strings.Join(args, " "), out, stderr.String())
	case errors.As(err, &exit):
		return pyRun{string(out), stderr.String(), exit.ExitCode()}
	case err != nil:
		t.Fatalf("%s %s: %v", py, strings.Join(args, " "), err)
	}
	return pyRun{string(out), stderr.String(), 0}
}

// pyProc is a python3 process running in the background.
type pyProc struct {
	stdout, stderr *logbuf.Buffer
	done           chan struct{} // closed when it exited, with code set
	code           int
}

// startPython starts python3 with args and the environment env (besides
// this process's), in a temporary directory; it is killed when the test
// ends if it still runs.
func startPython(t *testing.T, env []string, args ...string) *pyProc {
	t.Helper()
	cmd := exec.Command(python3(t), args...)
	cmd.Dir = t.TempDir()
	cmd.Env = append(os.Environ(), "PYTHONDONTWRITEBYTECODE=1", "FENCED_TOKEN=", "FENCED_URL=")
	cmd.Env = append(cmd.Env, env...)
	p := &pyProc{stdout: &logbuf.Buffer{}, stderr: &logbuf.Buffer{}, done: make(chan struct{})}
	cmd.Stdout, cmd.Stderr = p.stdout, p.stderr
	if err := cmd.Start(); err != nil {
		t.Fatalf("python3 %s: %v", strings.Join(args, " "), err)
	}
	go func() {
		err := cmd.Wait()
		var exit *exec.ExitError
		if errors.As(err, &exit) {
			p.code = exit.ExitCode()
		} else if err != nil {
			p.code = -1
		}
		close(p.done)
	}()
	t.Cleanup(func() {
		cmd.Process.Kill()
		<-p.done
	})
	return p
}

// wait waits for the process to exit, at most a minute, and returns its
// exit code.
func (p *pyProc) wait(t *testing.T) int {
	t.Helper()
	select {
	case <-p.done:
		return p.code
	case <-time.After(time.Minute):
		t.Fatalf("python3 did not exit within a minute\nstdout: %s\nstderr: %s", p.stdout, p.stderr)
		return 0
	}
}
