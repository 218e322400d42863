package main

import (
	"context"
	"fmt"
	"io"
	"strconv"
	"time"

	"github.com/fenced/fenced"
	"github.com/fenced/fenced/fencedtype"
	"github.com/fenced/fenced/internal/lib/display"
	"github.com/spf13/cobra"
)

func newSemaphoreCmd(a *app) *cobra.Command {
	cmd := group(&cobra.Command{
		Use:     "semaphore",
		Aliases: []string{"sem"},
		Short:   "Acquire, renew, release or inspect the slots of a semaphore",
		Long: `A semaphore is N slots under one name; a lease is the case N = 1. Each
grant of a slot carries its own fence, from one counter per name, so the
fences of all its slots are strictly increasing: pass it to your protected
writes. Renew and release name the owner and fence they hold, and fail as
stale (exit 4) once the slot was lost.`,
	})
	cmd.AddCommand(
		newSemaphoreAcquireCmd(a),
		newSemaphoreRenewCmd(a),
		newSemaphoreReleaseCmd(a),
		newSemaphoreShowCmd(a),
		newSemaphoreListCmd(a),
	)
	return cmd
}

func newSemaphoreAcquireCmd(a *app) *cobra.Command {
	var owner string
	var slots int
	var ttl time.Duration
	cmd := callCmd[*fenced.Slot]{
		check: func(cmd *cobra.Command, args []string) error {
			if err := requireFlags(cmd, "owner", "slots"); err != nil {
				return err
			}
			return fenced.ValidateAcquireSlot(args[0], owner, slots, ttl)
		},
		call: func(ctx context.Context, c *fenced.Client, args []string) (*fenced.Slot, error) {
			return c.AcquireSlot(ctx, args[0], owner, slots, ttl)
		},
		text: slotText("acquired"),
	}.build(a, &cobra.Command{
		Use:   "acquire NAME --slots N --owner OWNER",
		Short: "Take a slot of a semaphore (or extend OWNER's, keeping its fence)",
		Long: `Take a free slot of the named semaphore of --slots slots for --ttl by the
database clock and print its slot and fence.

If OWNER already holds a slot, its expiry is extended and its fence kept, so a
retried acquire never takes a second slot. Otherwise the lowest free slot is
granted with the name's next fence. If every slot is held, acquire fails with
exit 3. The semaphore's number of slots becomes --slots.`,
		Example: `  fenced semaphore acquire encoders --slots 3 --owner worker-1 --ttl 1m
  fenced semaphore acquire encoders --slots 3 --owner worker-1 --json | jq .fence`,
		Args: exactArgs("NAME"),
	})
	ownerFlag(cmd, &owner, "owner to hold the slot as (required)")
	cmd.Flags().IntVar(&slots, "slots", 0, "number of slots of the semaphore, 1 to 1000 (required)")
	ttlFlag(cmd, &ttl)
	return cmd
}

func newSemaphoreRenewCmd(a *app) *cobra.Command {
	var owner string
	var fence int64
	var ttl time.Duration
	cmd := callCmd[*fenced.Slot]{
		check: func(cmd *cobra.Command, args []string) error {
			if err := requireFlags(cmd, "owner", "fence"); err != nil {
				return err
			}
			return fenced.ValidateRenewSlot(fenced.Slot{Name: args[0], Owner: owner, Fence: fence}, ttl)
		},
		call: func(ctx context.Context, c *fenced.Client, args []string) (*fenced.Slot, error) {
			s, err := c.RenewSlot(ctx, fenced.Slot{Name: args[0], Owner: owner, Fence: fence}, ttl)
			return s, notFound("semaphore", args[0], err)
		},
		text: slotText("renewed"),
	}.build(a, &cobra.Command{
		Use:   "renew NAME --owner OWNER --fence N",
		Short: "Extend a slot you hold",
		Long: `Extend the grant --fence of the named semaphore to --ttl from now by the
database clock. It succeeds only while OWNER holds that grant unexpired;
otherwise it fails as stale (exit 4): acquire again, and get a new fence.`,
		Example: `  fenced semaphore renew encoders --owner worker-1 --fence 7 --ttl 1m`,
		Args:    exactArgs("NAME"),
	})
	ownerFlag(cmd, &owner, "owner holding the slot (required)")
	fenceFlag(cmd, &fence, "fence of the grant held (required)")
	ttlFlag(cmd, &ttl)
	return cmd
}

func newSemaphoreReleaseCmd(a *app) *cobra.Command {
	var owner string
	var fence int64
	cmd := callCmd[*fenced.Slot]{
		check: func(cmd *cobra.Command, args []string) error {
			if err := requireFlags(cmd, "owner", "fence"); err != nil {
				return err
			}
			return fenced.ValidateReleaseSlot(fenced.Slot{Name: args[0], Owner: owner, Fence: fence})
		},
		call: func(ctx context.Context, c *fenced.Client, args []string) (*fenced.Slot, error) {
			s, err := c.ReleaseSlot(ctx, fenced.Slot{Name: args[0], Owner: owner, Fence: fence})
			return s, notFound("semaphore", args[0], err)
		},
		text: slotText("released"),
	}.build(a, &cobra.Command{
		Use:   "release NAME --owner OWNER --fence N",
		Short: "Give up a slot you hold",
		Long: `Release the grant --fence of the named semaphore, freeing its slot. Releasing
again, or after the grant expired with nobody taking the slot over, succeeds;
after a takeover it fails as stale (exit 4).`,
		Example: `  fenced semaphore release encoders --owner worker-1 --fence 7`,
		Args:    exactArgs("NAME"),
	})
	ownerFlag(cmd, &owner, "owner holding the slot (required)")
	fenceFlag(cmd, &fence, "fence of the grant held (required)")
	return cmd
}

func newSemaphoreShowCmd(a *app) *cobra.Command {
	return callCmd[*fenced.Semaphore]{
		read:  true,
		check: func(_ *cobra.Command, args []string) error { return fenced.ValidateGetSemaphore(args[0]) },
		call: func(ctx context.Context, c *fenced.Client, args []string) (*fenced.Semaphore, error) {
			s, err := c.GetSemaphore(ctx, args[0])
			return s, notFound("semaphore", args[0], err)
		},
		text: func(w io.Writer, s *fenced.Semaphore) error { return writeSemaphoreTable(w, []*fenced.Semaphore{s}) },
	}.build(a, &cobra.Command{
		Use:   "show NAME",
		Short: "Show a semaphore: its slots, last fence, and who holds which slot until when",
		Example: `  fenced semaphore show encoders
  fenced semaphore show encoders --json`,
		Args: exactArgs("NAME"),
	})
}

func newSemaphoreListCmd(a *app) *cobra.Command {
	return callCmd[[]*fenced.Semaphore]{
		read: true,
		call: func(ctx context.Context, c *fenced.Client, _ []string) ([]*fenced.Semaphore, error) {
			return c.ListSemaphores(ctx)
		},
		json: listJSON[*fenced.Semaphore],
		text: writeSemaphoreTable,
	}.build(a, &cobra.Command{
		Use:     "ls",
		Aliases: []string{"list"},
		Short:   "List every semaphore with its holders, by name",
		Example: `  fenced semaphore ls
  fenced semaphore ls --json | jq '.[] | {name, held: (.holders | length)}'`,
		Args: exactArgs(),
	})
}

// slotText prints the outcome of acquire, renew or release.
func slotText(verb string) func(io.Writer, *fenced.Slot) error {
	return func(w io.Writer, s *fenced.Slot) error {
		line := fmt.Sprintf("%s slot %d of semaphore %s: owner %s, fence %d", verb, s.Slot, display.Quote(s.Name), display.Quote(s.Owner), s.Fence)
		if s.Released {
			line += ", held until " + fencedtype.FormatTime(s.ExpiresAt)
		} else {
			line += ", expires " + fencedtype.FormatTime(s.ExpiresAt)
		}
		_, err := fmt.Fprintln(w, line)
		return err
	}
}

// writeSemaphoreTable prints one row per holder (and one per semaphore
// nobody holds).
func writeSemaphoreTable(w io.Writer, ss []*fenced.Semaphore) error {
	rows := [][]string{{"NAME", "SLOTS", "LAST_FENCE", "SLOT", "OWNER", "FENCE", "HELD_UNTIL"}}
	for _, s := range ss {
		head := []string{display.Name(s.Name), strconv.Itoa(s.Slots), strconv.FormatInt(s.Fence, 10)}
		if len(s.Holders) == 0 {
			rows = append(rows, append(head, "-", "-", "-", "-"))
		}
		for _, h := range s.Holders {
			rows = append(rows, append(head[:3:3], strconv.Itoa(h.Slot), display.Name(h.Owner), strconv.FormatInt(h.Fence, 10),
				fencedtype.FormatTime(h.ExpiresAt)))
		}
	}
	return (display.Table{Rows: rows}).Write(w)
}
