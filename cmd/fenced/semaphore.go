package main

import (
	"fmt"
	"io"
	"strconv"
	"time"

	"github.com/fenced/fenced"
	"github.com/fenced/fenced/fencedtype"
	"github.com/fenced/fenced/internal/display"
	"github.com/fenced/fenced/internal/wire"
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
	var asJSON bool
	cmd := &cobra.Command{
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
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := requireFlags(cmd, "owner", "slots"); err != nil {
				return err
			}
			if err := fenced.ValidateAcquireSlot(args[0], owner, slots, ttl); err != nil {
				return err
			}
			c, err := a.open(cmd.Context())
			if err != nil {
				return err
			}
			defer c.Close()
			s, err := c.AcquireSlot(cmd.Context(), args[0], owner, slots, ttl)
			if err != nil {
				return err
			}
			return printSlot(cmd, "acquired", s, asJSON)
		},
	}
	ownerFlag(cmd, &owner, "owner to hold the slot as (required)")
	cmd.Flags().IntVar(&slots, "slots", 0, "number of slots of the semaphore, 1 to 1000 (required)")
	ttlFlag(cmd, &ttl)
	jsonFlag(cmd, &asJSON)
	return cmd
}

func newSemaphoreRenewCmd(a *app) *cobra.Command {
	var owner string
	var fence int64
	var ttl time.Duration
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "renew NAME --owner OWNER --fence N",
		Short: "Extend a slot you hold",
		Long: `Extend the grant --fence of the named semaphore to --ttl from now by the
database clock. It succeeds only while OWNER holds that grant unexpired;
otherwise it fails as stale (exit 4): acquire again, and get a new fence.`,
		Example: `  fenced semaphore renew encoders --owner worker-1 --fence 7 --ttl 1m`,
		Args:    exactArgs("NAME"),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := requireFlags(cmd, "owner", "fence"); err != nil {
				return err
			}
			ref := fenced.Slot{Name: args[0], Owner: owner, Fence: fence}
			if err := fenced.ValidateRenewSlot(ref, ttl); err != nil {
				return err
			}
			c, err := a.open(cmd.Context())
			if err != nil {
				return err
			}
			defer c.Close()
			s, err := c.RenewSlot(cmd.Context(), ref, ttl)
			if err != nil {
				return notFound("semaphore", args[0], err)
			}
			return printSlot(cmd, "renewed", s, asJSON)
		},
	}
	ownerFlag(cmd, &owner, "owner holding the slot (required)")
	fenceFlag(cmd, &fence, "fence of the grant held (required)")
	ttlFlag(cmd, &ttl)
	jsonFlag(cmd, &asJSON)
	return cmd
}

func newSemaphoreReleaseCmd(a *app) *cobra.Command {
	var owner string
	var fence int64
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "release NAME --owner OWNER --fence N",
		Short: "Give up a slot you hold",
		Long: `Release the grant --fence of the named semaphore, freeing its slot. Releasing
again, or after the grant expired with nobody taking the slot over, succeeds;
after a takeover it fails as stale (exit 4).`,
		Example: `  fenced semaphore release encoders --owner worker-1 --fence 7`,
		Args:    exactArgs("NAME"),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := requireFlags(cmd, "owner", "fence"); err != nil {
				return err
			}
			ref := fenced.Slot{Name: args[0], Owner: owner, Fence: fence}
			if err := fenced.ValidateReleaseSlot(ref); err != nil {
				return err
			}
			c, err := a.open(cmd.Context())
			if err != nil {
				return err
			}
			defer c.Close()
			s, err := c.ReleaseSlot(cmd.Context(), ref)
			if err != nil {
				return notFound("semaphore", args[0], err)
			}
			return printSlot(cmd, "released", s, asJSON)
		},
	}
	ownerFlag(cmd, &owner, "owner holding the slot (required)")
	fenceFlag(cmd, &fence, "fence of the grant held (required)")
	jsonFlag(cmd, &asJSON)
	return cmd
}

func newSemaphoreShowCmd(a *app) *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "show NAME",
		Short: "Show a semaphore: its slots, last fence, and who holds which slot until when",
		Example: `  fenced semaphore show encoders
  fenced semaphore show encoders --json`,
		Args: exactArgs("NAME"),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := fenced.ValidateGetSemaphore(args[0]); err != nil {
				return err
			}
			c, err := a.openRead(cmd.Context())
			if err != nil {
				return err
			}
			defer c.Close()
			s, err := c.GetSemaphore(cmd.Context(), args[0])
			if err != nil {
				return notFound("semaphore", args[0], err)
			}
			if asJSON {
				return writeJSON(cmd.OutOrStdout(), *s)
			}
			return writeSemaphoreTable(cmd.OutOrStdout(), []*fenced.Semaphore{s})
		},
	}
	jsonFlag(cmd, &asJSON)
	return cmd
}

func newSemaphoreListCmd(a *app) *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:     "ls",
		Aliases: []string{"list"},
		Short:   "List every semaphore with its holders, by name",
		Example: `  fenced semaphore ls
  fenced semaphore ls --json | jq '.[] | {name, held: (.holders | length)}'`,
		Args: exactArgs(),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := a.openRead(cmd.Context())
			if err != nil {
				return err
			}
			defer c.Close()
			ss, err := c.ListSemaphores(cmd.Context())
			if err != nil {
				return err
			}
			if asJSON {
				return writeJSON(cmd.OutOrStdout(), wire.List(ss))
			}
			return writeSemaphoreTable(cmd.OutOrStdout(), ss)
		},
	}
	jsonFlag(cmd, &asJSON)
	return cmd
}

// printSlot prints the outcome of acquire, renew or release.
func printSlot(cmd *cobra.Command, verb string, s *fenced.Slot, asJSON bool) error {
	w := cmd.OutOrStdout()
	if asJSON {
		return writeJSON(w, *s)
	}
	line := fmt.Sprintf("%s slot %d of semaphore %s: owner %s, fence %d", verb, s.Slot, display.Quote(s.Name), display.Quote(s.Owner), s.Fence)
	if s.Released {
		line += ", held until " + fencedtype.FormatTime(s.ExpiresAt)
	} else {
		line += ", expires " + fencedtype.FormatTime(s.ExpiresAt)
	}
	_, err := fmt.Fprintln(w, line)
	return err
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
