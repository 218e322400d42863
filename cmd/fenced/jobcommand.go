package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/fenced/fenced"
	"github.com/fenced/fenced/internal/lib/jsoncheck"
)

// Limits on what "job work" passes to and keeps from a command.
const (
	maxArgsInEnv   = 64 << 10 // FENCED_JOB_ARGS is left out above it (stdin has the args)
	stderrTailSize = 8 << 10  // of a failed command's stderr, the end kept as the error
)

// jobHandler runs p's command for one attempt (see "job work"'s help);
// ended is called once the command has exited, before the outcome is
// returned to the worker.
func (a *app) jobHandler(p workParams, ended func()) fenced.Handler {
	return func(ctx context.Context, r *fenced.JobRun) error {
		child := a.jobCommand(p, r.Job)
		var stdout capped
		stdout.limit = fenced.MaxArgsBytes
		tail := &tailWriter{max: stderrTailSize}
		child.Stdout, child.Stderr = &stdout, io.MultiWriter(a.stderr, tail)
		killed, err := runKillable(ctx, child, p.grace)
		defer ended()
		if err != nil && child.ProcessState == nil {
			// It never ran: a missing program would fail every attempt.
			return fenced.Discard(fmt.Errorf("run %s: %w", p.argv[0], err))
		}
		if killed {
			// Lost, cancelled or stopping: the worker decides what is
			// written. A command that ended on its own before reports its
			// outcome below, and the attempt's fence decides whether it
			// is written.
			return context.Cause(ctx)
		}
		if code := exitStatusOf(child.ProcessState); code != 0 {
			msg := fmt.Sprintf("exit status %d", code)
			if t := strings.TrimSpace(tail.String()); t != "" {
				msg += ": " + t
			}
			return errors.New(msg)
		}
		out := bytes.TrimSpace(stdout.buf.Bytes())
		switch {
		case stdout.over:
			return fenced.Discard(fmt.Errorf("exit status 0, but stdout is over %d bytes, the limit of an output", fenced.MaxArgsBytes))
		case len(out) == 0:
			return nil
		}
		if msg := jsoncheck.SyntaxError(out); msg != "" {
			return fenced.Discard(fmt.Errorf("exit status 0, but stdout is not JSON: %s", msg))
		}
		r.SetOutput(json.RawMessage(out))
		return nil
	}
}

// jobCommand builds the command of one attempt of j: its args on stdin, the
// job in its environment, in a process group of its own.
func (a *app) jobCommand(p workParams, j *fenced.Job) *exec.Cmd {
	child := exec.Command(p.argv[0], p.argv[1:]...)
	child.Stdin = bytes.NewReader(j.Args)
	child.Env = append(os.Environ(),
		"FENCED_JOB_ID="+strconv.FormatInt(j.ID, 10),
		"FENCED_JOB_KIND="+j.Kind,
		"FENCED_JOB_QUEUE="+j.Queue,
		"FENCED_FENCE="+strconv.FormatInt(j.Fence, 10),
		"FENCED_ATTEMPT="+strconv.Itoa(j.Attempt),
		"FENCED_MAX_ATTEMPTS="+strconv.Itoa(j.MaxAttempts),
		"FENCED_OWNER="+p.owner,
	)
	if len(j.Args) <= maxArgsInEnv {
		child.Env = append(child.Env, "FENCED_JOB_ARGS="+string(j.Args))
	}
	if a.db != "" {
		child.Env = append(child.Env, envDatabaseURL+"="+a.db)
	}
	ownGroup(child)
	// A grandchild still holding stdout open must not hold the attempt.
	child.WaitDelay = time.Second
	return child
}

// runKillable runs child until it exits; once ctx ends first, its process
// group gets SIGTERM, then SIGKILL after grace, and killed is true. The
// error is Start's or Wait's.
func runKillable(ctx context.Context, child *exec.Cmd, grace time.Duration) (killed bool, err error) {
	if err := child.Start(); err != nil {
		return false, err
	}
	exited := make(chan error, 1)
	go func() { exited <- child.Wait() }()
	select {
	case err := <-exited:
		return false, err
	case <-ctx.Done():
	}
	signalGroup(child, syscall.SIGTERM)
	t := time.NewTimer(grace)
	defer t.Stop()
	select {
	case err := <-exited:
		return true, err
	case <-t.C:
		signalGroup(child, syscall.SIGKILL)
		return true, <-exited
	}
}

// capped keeps what is written up to limit bytes and notes more; it never
// refuses a write, so the command never blocks on a full pipe.
type capped struct {
	buf   bytes.Buffer
	limit int
	over  bool
}

func (c *capped) Write(b []byte) (int, error) {
	if room := c.limit - c.buf.Len(); len(b) > room {
		c.over = true
		c.buf.Write(b[:max(room, 0)])
		return len(b), nil
	}
	return c.buf.Write(b)
}

// tailWriter keeps the last max bytes written.
type tailWriter struct {
	b   []byte
	max int
	cut bool
}

func (t *tailWriter) Write(b []byte) (int, error) {
	t.b = append(t.b, b...)
	if len(t.b) > t.max {
		t.b, t.cut = t.b[len(t.b)-t.max:], true
	}
	return len(b), nil
}

// String is the tail, marked "…" when the start was cut.
func (t *tailWriter) String() string {
	if t.cut {
		return "…" + string(t.b)
	}
	return string(t.b)
}
