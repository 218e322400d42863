package demo

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"time"

	"github.com/fenced/fenced"
)

// Worker is the body of the hidden "fenced demo-worker" command: a worker
// process the demo drives and pauses. It acquires the lease, prints
// "granted FENCE", then obeys lines on stdin:
//
//	write FENCED_KEY UNFENCED_KEY VALUE
//
// writes VALUE to the fenced store under its fence and to the unfenced store
// (fence 0, no token checked), printing one outcome line for each. It never
// re-checks its lease: it is the worker that does not know it was paused.
func Worker(ctx context.Context, args []string) int {
	fs := flag.NewFlagSet("demo-worker", flag.ContinueOnError)
	url := fs.String("db", "", "database URL")
	name := fs.String("lease", "", "lease name")
	owner := fs.String("owner", "", "owner")
	ttl := fs.Duration("ttl", time.Second, "lease ttl")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	c, err := fenced.Open(ctx, *url, fenced.Config{})
	if err != nil {
		fmt.Printf("error %v\n", err)
		return 1
	}
	defer c.Close()
	l, err := c.AcquireLease(ctx, *name, *owner, *ttl)
	if err != nil {
		fmt.Printf("error %v\n", err)
		return 1
	}
	fmt.Printf("granted %d\n", l.Fence)
	in := bufio.NewScanner(os.Stdin)
	for in.Scan() {
		f := strings.Fields(in.Text())
		if len(f) != 4 || f[0] != "write" {
			fmt.Printf("error bad command %q\n", in.Text())
			continue
		}
		_, err := c.WriteResource(ctx, f[1], []byte(f[3]), l.Fence, fenced.WriteOptions{})
		fmt.Println(outcome(err))
		_, err = c.WriteResource(ctx, f[2], []byte(f[3]), 0, fenced.WriteOptions{})
		fmt.Println(outcome(err))
	}
	return 0
}

// outcome is the one-line result a worker reports, in the demo's words.
func outcome(err error) string {
	var stale *fenced.StaleError
	switch {
	case err == nil:
		return "accepted"
	case errors.As(err, &stale):
		return fmt.Sprintf("rejected: stale (current fence %d)", stale.CurrentFence)
	default:
		return "error: " + err.Error()
	}
}

// worker is a running worker process.
type worker struct {
	cmd   *exec.Cmd
	in    io.WriteCloser
	out   *bufio.Scanner
	fence int64
}

func startWorker(ctx context.Context, e *env, name, owner string, ttl time.Duration) (*worker, error) {
	cmd := exec.CommandContext(ctx, e.exe, "demo-worker", "--db", e.url, "--lease", name, "--owner", owner, "--ttl", ttl.String())
	cmd.Stderr = os.Stderr
	in, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	w := &worker{cmd: cmd, in: in, out: bufio.NewScanner(out)}
	line := w.read()
	fence, ok := strings.CutPrefix(line, "granted ")
	if !ok {
		w.kill()
		return nil, fmt.Errorf("worker said %q", line)
	}
	if w.fence, err = strconv.ParseInt(fence, 10, 64); err != nil {
		w.kill()
		return nil, err
	}
	return w, nil
}

func (w *worker) send(line string) error {
	_, err := io.WriteString(w.in, line+"\n")
	return err
}

// read returns the worker's next line ("" when it is gone).
func (w *worker) read() string {
	if w.out.Scan() {
		return w.out.Text()
	}
	return ""
}

func (w *worker) wait() error {
	w.in.Close()
	return w.cmd.Wait()
}

func (w *worker) kill() {
	if w.cmd.ProcessState == nil {
		w.cmd.Process.Kill()
		w.cmd.Wait()
	}
}
