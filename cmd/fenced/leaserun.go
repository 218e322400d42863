package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"strconv"
	"syscall"
	"time"

	"github.com/fenced/fenced"
	"github.com/fenced/fenced/internal/lib/display"
	"github.com/spf13/cobra"
)

// forwarded are the signals "lease run" passes on to its command. The
// command stays in fenced's process group, so that it can use the terminal;
// a Ctrl-C typed there reaches it directly as well as through fenced.
var forwarded = []os.Signal{os.Interrupt, syscall.SIGTERM, syscall.SIGHUP}

// runParams are the inputs of "lease run".
type runParams struct {
	name  string
	owner string
	ttl   time.Duration
	grace time.Duration
	argv  []string
}

func newLeaseRunCmd(a *app) *cobra.Command {
	var p runParams
	cmd := &cobra.Command{
		Use:   "run NAME [flags] -- COMMAND [ARG...]",
		Short: "Run a command while holding a lease (like flock, but fenced)",
		Long: `Acquire the named lease, run COMMAND while renewing it in the background
(every ttl/3), then release it. COMMAND gets stdin, stdout and stderr, and
these variables added to its environment:

  FENCED_LEASE         the lease name
  FENCED_OWNER         the owner holding it
  FENCED_FENCE         the fence of this grant: pass it to your protected writes
  FENCED_DATABASE_URL  the --db URL, when --db was given

If another owner holds the lease, fenced exits 3 without running COMMAND.
SIGINT, SIGTERM and SIGHUP sent to fenced are forwarded to COMMAND. If the
lease is lost (a renewal is refused as stale, or renewals fail until the
lease's time is up), COMMAND gets SIGTERM, then SIGKILL after --grace: from
then on its writes carrying FENCED_FENCE are refused anyway.

fenced exits with COMMAND's status (128+N if it was killed by signal N); if
the lease was lost and COMMAND still exited 0, it exits 4 (stale) or 1.`,
		Example: `  # At most one report at a time, across hosts sharing the database.
  fenced lease run nightly-report --ttl 1m -- ./report.sh --date today

  # Pass the fence on to a protected write.
  fenced lease run invoices -- sh -c 'fenced resource write invoice-42 --fence "$FENCED_FENCE" --value paid'`,
		Args: runArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := p.parse(cmd, args); err != nil {
				return err
			}
			return a.runUnderLease(cmd.Context(), p)
		},
	}
	ownerFlag(cmd, &p.owner, "owner to hold the lease as (default hostname:pid)")
	ttlFlag(cmd, &p.ttl)
	cmd.Flags().DurationVar(&p.grace, "grace", 10*time.Second, "time COMMAND has to exit after SIGTERM before SIGKILL")
	return cmd
}

// parse reads the NAME and COMMAND of "lease run" or "lease elect" from
// args and refuses bad input before the database is opened.
func (p *runParams) parse(cmd *cobra.Command, args []string) error {
	p.name, p.argv = args[0], args[1:]
	if d := cmd.ArgsLenAtDash(); d > 0 {
		p.argv = args[d:]
	}
	if !cmd.Flags().Changed("owner") {
		p.owner = defaultOwner()
	}
	if p.grace < 0 {
		return usage("--grace %s is negative", p.grace)
	}
	return fenced.ValidateAcquireLease(p.name, p.owner, p.ttl)
}

// runArgs accepts "NAME -- COMMAND [ARG...]", and "NAME COMMAND [ARG...]"
// when COMMAND has no flags of its own.
func runArgs(cmd *cobra.Command, args []string) error {
	switch d := cmd.ArgsLenAtDash(); {
	case len(args) == 0:
		return usage("want NAME -- COMMAND [ARG...]: missing NAME")
	case d > 1:
		return usage("want NAME -- COMMAND [ARG...]: unexpected %q before --", args[1])
	case d == 0:
		return usage("want NAME -- COMMAND [ARG...]: missing NAME before --")
	case len(args) < 2:
		return usage("want NAME -- COMMAND [ARG...]: missing COMMAND")
	}
	return nil
}

// defaultOwner is hostname:pid.
func defaultOwner() string {
	host, err := os.Hostname()
	if err != nil || host == "" {
		host = "localhost"
	}
	return host + ":" + strconv.Itoa(os.Getpid())
}

// runUnderLease acquires the lease, runs the command under a keeper and
// returns its outcome (see the command's help).
func (a *app) runUnderLease(ctx context.Context, p runParams) error {
	c, err := a.openWith(ctx, fenced.Config{Logger: newLog(a.stderr)})
	if err != nil {
		return err
	}
	defer c.Close()

	// Catch signals before the command starts, so one that arrives in
	// between is forwarded rather than lost.
	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, forwarded...)
	defer signal.Stop(sigs)

	k, stop, err := keepLease(ctx, c, p)
	if err != nil {
		return err
	}
	defer stop()

	child := a.command(p, k.Lease())
	if err := child.Start(); err != nil {
		a.release(k)
		return startError(p.argv[0], err)
	}
	lost := a.supervise(child, k.Context(), sigs, p.grace)
	if lost == nil {
		lost = a.release(k)
	}
	return outcome(child.ProcessState, lost)
}

// keepLease acquires the lease under a keeper whose life is not bound to
// ctx: once the command runs, signals are forwarded to it and the lease is
// kept until it exits. An interrupt while acquiring abandons the run.
func keepLease(ctx context.Context, c *fenced.Client, p runParams) (*fenced.Keeper, func(), error) {
	keepCtx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	unwatch := context.AfterFunc(ctx, cancel)
	k, err := c.Keep(keepCtx, p.name, p.owner, p.ttl, fenced.KeepOptions{})
	if !unwatch() { // ctx ended first: interrupted while acquiring
		cancel()
		if k != nil {
			rctx, rcancel := context.WithTimeout(context.Background(), 10*time.Second)
			_ = k.Release(rctx) // best effort; otherwise it runs out at its expiry
			rcancel()
		}
		return nil, nil, fmt.Errorf("interrupted while acquiring lease %s", display.Quote(p.name))
	}
	if err != nil {
		cancel()
		return nil, nil, err
	}
	return k, cancel, nil
}

// command builds the child process: stdio passed through, the lease added to
// its environment.
func (a *app) command(p runParams, l fenced.Lease) *exec.Cmd {
	child := exec.Command(p.argv[0], p.argv[1:]...)
	child.Stdin, child.Stdout, child.Stderr = os.Stdin, os.Stdout, os.Stderr
	child.Env = append(os.Environ(),
		"FENCED_LEASE="+l.Name,
		"FENCED_OWNER="+l.Owner,
		"FENCED_FENCE="+strconv.FormatInt(l.Fence, 10),
	)
	if a.db != "" {
		child.Env = append(child.Env, envDatabaseURL+"="+a.db)
	}
	return child
}

// supervise waits for child to exit, forwarding sigs to it. If held ends
// first (the lease was lost: a Keeper's context), the child gets SIGTERM,
// then SIGKILL after grace. It returns why the lease was lost (held's
// cause), or nil.
func (a *app) supervise(child *exec.Cmd, held context.Context, sigs <-chan os.Signal, grace time.Duration) error {
	exited := make(chan struct{})
	go func() {
		_ = child.Wait() // the status is read from child.ProcessState
		close(exited)
	}()
	var lost error
	var kill <-chan time.Time
	lostC := held.Done()
	for {
		select {
		case <-exited:
			return lost
		case sig := <-sigs:
			_ = child.Process.Signal(sig)
		case <-lostC:
			lostC = nil
			lost = context.Cause(held) // names the lease and why it was lost
			fmt.Fprintf(a.stderr, "fenced: %s; sending SIGTERM to %s\n", a.scrub(oneLine(lost.Error())), child.Path)
			_ = child.Process.Signal(syscall.SIGTERM)
			t := time.NewTimer(grace)
			defer t.Stop()
			kill = t.C
		case <-kill:
			kill = nil
			fmt.Fprintf(a.stderr, "fenced: %s still running %s after SIGTERM; sending SIGKILL\n", child.Path, grace)
			_ = child.Process.Kill()
		}
	}
}

// release stops the keeper and releases the lease. A stale release means the
// lease was taken over before the keeper noticed: that is returned as a loss.
// Any other failure is reported; the lease then runs out at its expiry.
func (a *app) release(k *fenced.Keeper) error {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	err := k.Release(ctx)
	switch {
	case err == nil:
		return nil
	case errors.Is(err, fenced.ErrStale):
		err = fmt.Errorf("lease %s lost: %w", display.Quote(k.Lease().Name), err)
		fmt.Fprintf(a.stderr, "fenced: %s\n", a.scrub(err.Error()))
		return err
	default:
		fmt.Fprintf(a.stderr, "fenced: release lease %s (it will expire): %s\n", display.Quote(k.Lease().Name), a.scrub(oneLine(err.Error())))
		return nil
	}
}

// outcome is the result of "lease run": the command's exit status, or, when
// it exited 0 after the lease was lost, the loss.
func outcome(ps *os.ProcessState, lost error) error {
	code := exitStatusOf(ps)
	switch {
	case code != 0:
		return &exitStatus{code: code} // a loss was already reported
	case lost != nil:
		return &exitStatus{code: exitCode(lost)}
	default:
		return nil
	}
}

// exitStatusOf is a process's exit status as a shell reports it: 128+N when
// it was killed by signal N.
func exitStatusOf(ps *os.ProcessState) int {
	if ws, ok := ps.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return 128 + int(ws.Signal())
	}
	return ps.ExitCode()
}

// startError reports a command that could not be started, with the shell's
// status: 127 when it was not found, 126 otherwise.
func startError(name string, err error) error {
	code := 126
	if errors.Is(err, exec.ErrNotFound) || errors.Is(err, os.ErrNotExist) {
		code = 127
	}
	return &exitStatus{code: code, msg: fmt.Sprintf("run %s: %v", name, err)}
}
