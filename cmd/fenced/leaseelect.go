package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"sync"
	"time"

	"github.com/fenced/fenced"
	"github.com/fenced/fenced/internal/lib/display"
	"github.com/spf13/cobra"
)

func newLeaseElectCmd(a *app) *cobra.Command {
	var p runParams
	var again bool
	cmd := &cobra.Command{
		Use:   "elect NAME [flags] -- COMMAND [ARG...]",
		Short: "Wait to lead, then run a command as the leader (leader election, fenced)",
		Long: `Campaign for the named lease: while another owner holds it, wait, trying
again every quarter of --ttl; once elected, run COMMAND as "lease run" does,
renewing the lease in the background, and release it when COMMAND exits.
COMMAND gets stdin, stdout and stderr, and these variables added to its
environment:

  FENCED_LEASE         the lease name
  FENCED_OWNER         the owner leading
  FENCED_FENCE         the fence of this term: pass it to your protected writes
  FENCED_DATABASE_URL  the --db URL, when --db was given

If leadership is lost (a renewal is refused as stale, or renewals fail until
the lease's time is up), COMMAND gets SIGTERM, then SIGKILL after --grace:
from then on its writes carrying FENCED_FENCE are refused by the database,
whatever COMMAND does. Losing leadership is only noticed; what makes a
deposed leader harmless is the fence on its writes.

Without --again, fenced exits after one term as "lease run" does: with
COMMAND's status (128+N if it was killed by signal N), or, if leadership was
lost and COMMAND still exited 0, with 4 (stale) or 1.

With --again, fenced campaigns again after a term in which COMMAND exited 0
or leadership was lost, and runs COMMAND anew, with the new fence, each
time it is elected. A COMMAND that fails on its own while leading ends
fenced with its status. Campaigners take turns: the database records each
one waiting, and a leader that steps down while another waits lets it take
over (at its next try, within a third of --ttl) before it leads again, so
two campaigners alternate; with nobody waiting, it leads again at once.

SIGINT, SIGTERM and SIGHUP sent to fenced are forwarded to COMMAND while it
runs, and fenced then exits when it does, campaigning no more; while
fenced waits to be elected they end it (exit 1).`,
		Example: `  # One scheduler at a time across hosts; a standby takes over when the
  # leader exits or loses its lease, and every term has a new fence.
  fenced lease elect scheduler --ttl 15s --again -- ./scheduler

  # Wait for the lease instead of failing when it is held, then run once.
  fenced lease elect nightly-report -- sh -c 'fenced resource write report --fence "$FENCED_FENCE" --value done'`,
		Args: runArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := p.parse(cmd, args); err != nil {
				return err
			}
			return a.elect(cmd.Context(), p, again)
		},
	}
	ownerFlag(cmd, &p.owner, "owner to campaign as (default hostname:pid)")
	ttlFlag(cmd, &p.ttl)
	cmd.Flags().DurationVar(&p.grace, "grace", 10*time.Second, "time COMMAND has to exit after SIGTERM before SIGKILL")
	cmd.Flags().BoolVar(&again, "again", false, "campaign again after COMMAND exits 0 or leadership is lost")
	return cmd
}

// errTermsOver ends the campaign of "lease elect" after a term.
var errTermsOver = errors.New("no further term")

// errInterrupted is the cause of a campaign a signal ended while waiting.
var errInterrupted = errors.New("interrupted")

// relay hands fenced's signals to the command of the current term, or,
// between terms, ends the campaign.
type relay struct {
	mu          sync.Mutex
	term        chan os.Signal // nil between terms
	interrupted bool           // a signal came: no further term
	stop        context.CancelCauseFunc
}

func (r *relay) run(sigs <-chan os.Signal, done <-chan struct{}) {
	for {
		select {
		case <-done:
			return
		case sig := <-sigs:
			r.mu.Lock()
			r.interrupted = true
			if r.term != nil {
				select {
				case r.term <- sig: // supervise forwards it
				default: // a burst: the command has signals to handle already
				}
			} else {
				r.stop(errInterrupted)
			}
			r.mu.Unlock()
		}
	}
}

// begin starts a term: signals go to term from now on. It reports false if
// a signal already ended the campaign.
func (r *relay) begin(term chan os.Signal) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.term = term
	return !r.interrupted
}

// end ends a term and reports whether a signal came during it.
func (r *relay) end() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.term = nil
	return r.interrupted
}

// elect campaigns for the lease and runs the command in each term (see the
// command's help).
func (a *app) elect(ctx context.Context, p runParams, again bool) error {
	c, err := a.openWith(ctx, fenced.Config{Logger: newLog(a.stderr)})
	if err != nil {
		return err
	}
	defer c.Close()

	// Signals are ours from here: forwarded to the command during a term,
	// ending the campaign between terms (ctx ends on them too, so the
	// campaign does not run under it).
	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, forwarded...)
	defer signal.Stop(sigs)
	if ctx.Err() != nil { // a signal came before ours were caught
		return fmt.Errorf("interrupted while campaigning for lease %s", display.Quote(p.name))
	}
	cctx, stop := context.WithCancelCause(context.WithoutCancel(ctx))
	defer stop(nil)
	r := &relay{stop: stop}
	relayDone := make(chan struct{})
	defer close(relayDone)
	go r.run(sigs, relayDone)

	var child *exec.Cmd
	var lost error // the last term's loss, reported
	opts := fenced.CampaignOptions{
		// An acquire that failed other than as held (the database
		// unreachable) is retried; each failure is a log line on stderr.
		Logger: newLog(a.stderr),
		OnTermEnd: func(l fenced.Lease, ended error) {
			switch {
			case ended == nil || lost != nil:
			case errors.Is(ended, fenced.ErrStale):
				// Taken over before the keeper noticed.
				lost = fmt.Errorf("lease %s lost: %w", display.Quote(l.Name), ended)
				fmt.Fprintf(a.stderr, "fenced: %s\n", a.scrub(lost.Error()))
			default:
				fmt.Fprintf(a.stderr, "fenced: release lease %s (it will expire): %s\n", display.Quote(l.Name), a.scrub(oneLine(ended.Error())))
			}
		},
	}
	err = c.Campaign(cctx, p.name, p.owner, p.ttl, opts, func(held context.Context, l fenced.Lease) error {
		child, lost = nil, nil
		term := make(chan os.Signal, 4)
		if !r.begin(term) {
			r.end()
			return errInterrupted
		}
		child = a.command(p, l)
		if err := child.Start(); err != nil {
			r.end()
			return startError(p.argv[0], err)
		}
		lost = a.supervise(child, held, term, p.grace)
		interrupted := r.end()
		if !again || interrupted || lost == nil && exitStatusOf(child.ProcessState) != 0 {
			return errTermsOver
		}
		return nil
	})
	switch {
	case errors.Is(err, errTermsOver):
		return outcome(child.ProcessState, lost)
	case errors.Is(err, errInterrupted):
		return fmt.Errorf("interrupted while campaigning for lease %s", display.Quote(p.name))
	}
	return err
}
