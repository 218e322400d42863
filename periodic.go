package fenced

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/fenced/fenced/fencedtype"
	"github.com/robfig/cron/v3"
)

// PeriodicJob is a job the Maintainer enqueues once per slot of its
// schedule: every Every, or at the times of a Cron expression. A slot's job
// is enqueued by the first round at or after the slot's time (by the
// database clock) and before the next slot, through an idempotency key
// naming the kind and the slot, so that however many maintainers take turns
// a slot is enqueued once; a maintainer that starts, or takes over, between
// two slots enqueues the one that began last. Slots before that are not
// caught up. A slot is enqueued only within the maintainer's Retention of
// its time (later its finished job may have been deleted, key and all).
type PeriodicJob struct {
	Kind  string
	Args  any
	Queue string
	// Every is a fixed period of at least 1s; its slots are the multiples
	// of Every since the Unix epoch.
	Every time.Duration
	// Cron is a cron expression, read in UTC: five fields (minute, hour,
	// day of month, month, day of week; "0 9 * * 1-5" is 09:00 on
	// weekdays) or one of @yearly, @monthly, @weekly, @daily and @hourly.
	// A prefix "CRON_TZ=Area/City " reads it in that time zone instead
	// (with its daylight saving time: a time of day that does not occur on
	// a day is skipped that day, one that occurs twice runs at both). Give
	// either Every or Cron.
	Cron string
}

// maxCronLookback bounds how far back the current slot of a cron
// expression is looked for when the Maintainer keeps finished jobs for
// ever: five years and a day cover the rarest (29 February).
const maxCronLookback = (5*366 + 1) * 24 * time.Hour

// slotFunc is the start of the slot of a schedule that is current at now,
// looked for no further back than within; false if none began in it.
type slotFunc func(now time.Time, within time.Duration) (time.Time, bool)

// Validate checks the periodic job as StartMaintenance does: its kind,
// queue and args as an enqueue's, and its schedule. An error wraps
// ErrInvalid.
func (p PeriodicJob) Validate() error {
	_, err := p.slotFunc()
	return err
}

// periodicSlots checks each periodic job and returns the slot function of
// each schedule.
func periodicSlots(ps []PeriodicJob) ([]slotFunc, error) {
	slots := make([]slotFunc, 0, len(ps))
	for _, p := range ps {
		f, err := p.slotFunc()
		if err != nil {
			return nil, err
		}
		slots = append(slots, f)
	}
	return slots, nil
}

// slotFunc checks p and returns its schedule's slot function.
func (p PeriodicJob) slotFunc() (slotFunc, error) {
	if err := (EnqueueParams{Kind: p.Kind, Args: p.Args, Queue: p.Queue}).Validate(); err != nil {
		return nil, err
	}
	switch {
	case p.Every != 0 && p.Cron != "":
		return nil, fencedtype.Invalid("periodic", "%q has both an interval and a cron expression; give one", p.Kind)
	case p.Cron != "":
		s, err := parseCron(p.Cron)
		if err != nil {
			return nil, fencedtype.Invalid("periodic cron", "%q for %q: %v", p.Cron, p.Kind, err)
		}
		return func(now time.Time, within time.Duration) (time.Time, bool) { return lastSlot(s, now, within) }, nil
	case p.Every < time.Second:
		return nil, fencedtype.Invalid("periodic every", "%s for %q is under 1s", p.Every, p.Kind)
	default:
		every := p.Every
		return func(now time.Time, within time.Duration) (time.Time, bool) {
			start := now.Truncate(every)
			return start, now.Sub(start) < within
		}, nil
	}
}

// cronParser reads the five standard fields and the descriptors.
var cronParser = cron.NewParser(cron.Minute | cron.Hour | cron.Dom | cron.Month | cron.Dow | cron.Descriptor)

// parseCron parses a cron expression. "@every D" is refused: its times are
// counted from whenever it is asked, not fixed slots (Every is the fixed
// interval).
func parseCron(expr string) (cron.Schedule, error) {
	if strings.Contains(expr, "@every") {
		return nil, fmt.Errorf("@every is not a fixed schedule: give the interval as Every")
	}
	s, err := cronParser.Parse(expr)
	if err != nil {
		return nil, err
	}
	if s.Next(time.Unix(0, 0)).IsZero() {
		return nil, fmt.Errorf("it never matches")
	}
	return s, nil
}

// lastSlot is the latest time of s at or before now, if one lies within
// within of now. It looks back a minute, then twice as far each time until
// it finds one, then walks forward to the last: a handful of steps for any
// schedule, since no time of s lies in the later half of the window it
// stops at.
func lastSlot(s cron.Schedule, now time.Time, within time.Duration) (time.Time, bool) {
	for d := time.Minute; ; d *= 2 {
		d = min(d, within)
		next := s.Next(now.Add(-d))
		if !next.IsZero() && !next.After(now) {
			for {
				n := s.Next(next)
				if n.IsZero() || n.After(now) {
					return next, true
				}
				next = n
			}
		}
		if d == within {
			return time.Time{}, false
		}
	}
}

// periodic enqueues the periodic jobs whose current slot has no job yet.
func (m *Maintainer) periodic(ctx context.Context, lease Lease) error {
	if len(m.cfg.Periodic) == 0 {
		return nil
	}
	// The slot is read from the database clock, this round.
	cur, err := m.c.GetLease(ctx, lease.Name)
	if err != nil {
		return err
	}
	now := cur.DecidedAt
	within := m.cfg.Retention
	if within <= 0 {
		within = maxCronLookback
	}
	for i, p := range m.cfg.Periodic {
		start, ok := m.slots[i](now, within)
		if !ok {
			// The slot's job may have finished and been deleted by
			// retention already, taking its idempotency key with it:
			// enqueueing now could run the slot twice.
			continue
		}
		key := "periodic:" + p.Kind + ":" + strconv.FormatInt(start.Unix(), 10)
		_, _, err := m.c.Enqueue(ctx, EnqueueParams{Kind: p.Kind, Args: p.Args, Queue: p.Queue, IdempotencyKey: key})
		if err != nil {
			return fmt.Errorf("periodic %s: %w", p.Kind, err)
		}
	}
	return nil
}
