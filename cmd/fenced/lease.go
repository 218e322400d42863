package main

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/fenced/fenced"
	"github.com/fenced/fenced/fencedtype"
	"github.com/fenced/fenced/internal/lib/display"
	"github.com/spf13/cobra"
)

// defaultTTL is the --ttl of lease commands.
const defaultTTL = 30 * time.Second

func newLeaseCmd(a *app) *cobra.Command {
	cmd := group(&cobra.Command{
		Use:   "lease",
		Short: "Acquire, renew, release, inspect leases; run a command under one, or as leader",
		Long: `A lease is a named singleton held by one owner until it expires by the
database clock. Every grant to a new owner carries a higher fence; pass it to
your protected writes. Renew and release must name the owner and fence they
hold, and fail as stale (exit 4) once the lease was lost.`,
	})
	cmd.AddCommand(
		newLeaseAcquireCmd(a),
		newLeaseRenewCmd(a),
		newLeaseReleaseCmd(a),
		newLeaseShowCmd(a),
		newLeaseListCmd(a),
		newLeaseRunCmd(a),
		newLeaseElectCmd(a),
	)
	return cmd
}

func newLeaseAcquireCmd(a *app) *cobra.Command {
	var owner string
	var ttl time.Duration
	cmd := callCmd[*fenced.Lease]{
		check: func(cmd *cobra.Command, args []string) error {
			if err := requireFlags(cmd, "owner"); err != nil {
				return err
			}
			return fenced.ValidateAcquireLease(args[0], owner, ttl)
		},
		call: func(ctx context.Context, c *fenced.Client, args []string) (*fenced.Lease, error) {
			return c.AcquireLease(ctx, args[0], owner, ttl)
		},
		text: leaseText("acquired"),
	}.build(a, &cobra.Command{
		Use:   "acquire NAME --owner OWNER",
		Short: "Take a lease (or extend it, keeping its fence, if OWNER holds it)",
		Long: `Take the named lease for --ttl by the database clock and print its fence.

A free lease (never held, released or expired) is granted with a new fence.
If OWNER already holds it, the expiry is extended and the fence kept, so a
retried acquire never mints a second generation. If another owner holds it,
acquire fails with exit 3.`,
		Example: `  fenced lease acquire nightly-report --owner worker-1 --ttl 1m
  fenced lease acquire nightly-report --owner worker-1 --json | jq .fence`,
		Args: exactArgs("NAME"),
	})
	ownerFlag(cmd, &owner, "owner to hold the lease as (required)")
	ttlFlag(cmd, &ttl)
	return cmd
}

func newLeaseRenewCmd(a *app) *cobra.Command {
	var owner string
	var fence int64
	var ttl time.Duration
	cmd := callCmd[*fenced.Lease]{
		check: func(cmd *cobra.Command, args []string) error {
			if err := requireFlags(cmd, "owner", "fence"); err != nil {
				return err
			}
			return fenced.ValidateRenewLease(fenced.Lease{Name: args[0], Owner: owner, Fence: fence}, ttl)
		},
		call: func(ctx context.Context, c *fenced.Client, args []string) (*fenced.Lease, error) {
			l, err := c.RenewLease(ctx, fenced.Lease{Name: args[0], Owner: owner, Fence: fence}, ttl)
			return l, notFound("lease", args[0], err)
		},
		text: leaseText("renewed"),
	}.build(a, &cobra.Command{
		Use:   "renew NAME --owner OWNER --fence N",
		Short: "Extend a lease you hold",
		Long: `Extend the named lease to --ttl from now by the database clock. It succeeds
only while OWNER holds generation --fence unexpired; otherwise it fails as
stale (exit 4): acquire again, and get a new fence.`,
		Example: `  fenced lease renew nightly-report --owner worker-1 --fence 7 --ttl 1m`,
		Args:    exactArgs("NAME"),
	})
	ownerFlag(cmd, &owner, "owner holding the lease (required)")
	fenceFlag(cmd, &fence, "fence of the generation held (required)")
	ttlFlag(cmd, &ttl)
	return cmd
}

func newLeaseReleaseCmd(a *app) *cobra.Command {
	var owner string
	var fence int64
	cmd := callCmd[*fenced.Lease]{
		check: func(cmd *cobra.Command, args []string) error {
			if err := requireFlags(cmd, "owner", "fence"); err != nil {
				return err
			}
			return fenced.ValidateReleaseLease(fenced.Lease{Name: args[0], Owner: owner, Fence: fence})
		},
		call: func(ctx context.Context, c *fenced.Client, args []string) (*fenced.Lease, error) {
			l, err := c.ReleaseLease(ctx, fenced.Lease{Name: args[0], Owner: owner, Fence: fence})
			return l, notFound("lease", args[0], err)
		},
		text: leaseText("released"),
	}.build(a, &cobra.Command{
		Use:   "release NAME --owner OWNER --fence N",
		Short: "Give up a lease you hold",
		Long: `Release generation --fence of the named lease. The lease's fence is kept, so
the next owner gets a higher one. Releasing again, or after the lease expired
with nobody taking over, succeeds; after a takeover it fails as stale (exit 4).`,
		Example: `  fenced lease release nightly-report --owner worker-1 --fence 7`,
		Args:    exactArgs("NAME"),
	})
	ownerFlag(cmd, &owner, "owner holding the lease (required)")
	fenceFlag(cmd, &fence, "fence of the generation held (required)")
	return cmd
}

func newLeaseShowCmd(a *app) *cobra.Command {
	return callCmd[*fenced.Lease]{
		read:  true,
		check: func(_ *cobra.Command, args []string) error { return fenced.ValidateGetLease(args[0]) },
		call: func(ctx context.Context, c *fenced.Client, args []string) (*fenced.Lease, error) {
			l, err := c.GetLease(ctx, args[0])
			return l, notFound("lease", args[0], err)
		},
		text: func(w io.Writer, l *fenced.Lease) error { return writeLeaseTable(w, []*fenced.Lease{l}) },
	}.build(a, &cobra.Command{
		Use:   "show NAME",
		Short: "Show a lease: owner, fence, state (held, released, expired, advanced) and until when it is held",
		Example: `  fenced lease show nightly-report
  fenced lease show nightly-report --json`,
		Args: exactArgs("NAME"),
	})
}

func newLeaseListCmd(a *app) *cobra.Command {
	return callCmd[[]*fenced.Lease]{
		read: true,
		call: func(ctx context.Context, c *fenced.Client, _ []string) ([]*fenced.Lease, error) {
			return c.ListLeases(ctx)
		},
		json: listJSON[*fenced.Lease],
		text: writeLeaseTable,
	}.build(a, &cobra.Command{
		Use:     "ls",
		Aliases: []string{"list"},
		Short:   "List every lease, by name",
		Example: `  fenced lease ls
  fenced lease ls --json | jq '.[] | select(.held)'`,
		Args: exactArgs(),
	})
}

// leaseText prints the outcome of acquire, renew or release: when the
// lease expires, or, once released, until when it was held.
func leaseText(verb string) func(io.Writer, *fenced.Lease) error {
	return func(w io.Writer, l *fenced.Lease) error {
		line := fmt.Sprintf("%s lease %s: owner %s, fence %d", verb, display.Quote(l.Name), display.Quote(l.Owner), l.Fence)
		switch {
		case l.ExpiresAt.IsZero():
		case l.Released:
			line += ", held until " + fencedtype.FormatTime(l.ExpiresAt)
		default:
			line += ", expires " + fencedtype.FormatTime(l.ExpiresAt)
		}
		_, err := fmt.Fprintln(w, line)
		return err
	}
}

func ownerFlag(cmd *cobra.Command, p *string, help string) {
	cmd.Flags().StringVar(p, "owner", "", help)
}

func ttlFlag(cmd *cobra.Command, p *time.Duration) {
	cmd.Flags().DurationVar(p, "ttl", defaultTTL, "how long the lease lasts, by the database clock (1ms to 24h)")
}

func fenceFlag(cmd *cobra.Command, p *int64, help string) {
	cmd.Flags().Int64Var(p, "fence", 0, help)
}

func jsonFlag(cmd *cobra.Command, p *bool) {
	cmd.Flags().BoolVar(p, "json", false, "print JSON")
}
