package drivertest

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/fenced/fenced"
)

// runHandover: a campaigner whose lead returns steps down in favour of a
// campaigner waiting for the lease — two campaigners alternate, term after
// term — while a campaigner nobody waits for leads again at once
// (docs/design.md §4.6).
func runHandover(t *testing.T, b Backend) {
	t.Run("TwoCampaignersAlternate", func(t *testing.T) {
		t.Parallel()
		e := setup(t, b)
		// From the first term of the second campaigner on (before it, the
		// first may have led alone), no campaigner leads twice in a row.
		const terms = 6
		cctx, stop := context.WithCancel(ctx(t))
		defer stop()
		var (
			mu     sync.Mutex
			led    []fenced.Lease
			second = -1 // index in led of the second campaigner's first term
		)
		errs := make(chan error, 2)
		for _, owner := range []string{"A", "B"} {
			c := b.open(t, e.url, fenced.Config{})
			go func() {
				errs <- c.Campaign(cctx, "leader", owner, long, fenced.CampaignOptions{RetryEvery: 20 * time.Millisecond},
					func(_ context.Context, l fenced.Lease) error {
						mu.Lock()
						defer mu.Unlock()
						led = append(led, l)
						if second < 0 && l.Owner != led[0].Owner {
							second = len(led) - 1
						}
						if second >= 0 && len(led)-second >= terms {
							stop()
						}
						return nil
					})
			}()
		}
		for range 2 {
			if err := recv(t, errs, "campaign end"); !errors.Is(err, context.Canceled) {
				mu.Lock()
				defer mu.Unlock()
				t.Fatalf("campaign ended with %v, want context.Canceled (terms %s)", err, termOwners(led))
			}
		}
		for i := 1; i < len(led); i++ {
			if led[i].Fence <= led[i-1].Fence {
				t.Fatalf("term %d has fence %d after fence %d", i, led[i].Fence, led[i-1].Fence)
			}
		}
		for i := second + 1; i < len(led); i++ {
			if led[i].Owner == led[i-1].Owner {
				t.Fatalf("terms %s: %s led twice in a row after the other campaigner's first term (term %d)", termOwners(led), led[i].Owner, i)
			}
		}
		e.wantNoLeader(t, "leader")
	})
	// With nobody else waiting, a leader that steps down leads again at
	// once: each term begins before the last one's lease would have
	// expired (both times the database's), where a campaigner held back
	// by a record of waiting would wait at least the TTL.
	t.Run("ALoneCampaignerLeadsAgainAtOnce", func(t *testing.T) {
		t.Parallel()
		e := setup(t, b)
		var led []fenced.Lease
		cctx, stop := context.WithCancel(ctx(t))
		defer stop()
		err := e.c.Campaign(cctx, "leader", "A", long, fenced.CampaignOptions{}, func(_ context.Context, l fenced.Lease) error {
			led = append(led, l)
			if len(led) == 3 {
				stop()
			}
			return nil
		})
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("campaign returned %v", err)
		}
		wantPromptTerms(t, led)
		e.wantNoLeader(t, "leader")
	})
	// A campaigner that waited, then stopped campaigning, withdrew its
	// record: the leader that steps down next leads again at once.
	t.Run("ACampaignerThatStoppedWaitingHoldsNothingBack", func(t *testing.T) {
		t.Parallel()
		e := setup(t, b)
		elected := make(chan fenced.Lease, 2)
		proceed := make(chan struct{})
		actx, stopA := context.WithCancel(ctx(t))
		defer stopA()
		aDone := make(chan error, 1)
		terms := 0
		go func() {
			aDone <- e.c.Campaign(actx, "leader", "A", long, fenced.CampaignOptions{}, func(lctx context.Context, l fenced.Lease) error {
				elected <- l
				if terms++; terms == 1 { // the first term, until B waited and stopped
					<-proceed
					return nil
				}
				<-lctx.Done()
				return nil
			})
		}()
		l1 := recv(t, elected, "A's first term")
		waits := make(chan struct{}, 1)
		bctx, stopB := context.WithCancel(ctx(t))
		bDone := make(chan error, 1)
		go func() {
			c := b.open(t, e.url, fenced.Config{})
			bDone <- c.Campaign(bctx, "leader", "B", long, fenced.CampaignOptions{
				RetryEvery: 20 * time.Millisecond, Logger: slog.New(onMessage{"fenced: campaign waits", waits}),
			}, func(context.Context, fenced.Lease) error { return errors.New("B must not lead") })
		}()
		recv(t, waits, "B waiting")
		stopB()
		if err := recv(t, bDone, "end of B's campaign"); !errors.Is(err, context.Canceled) {
			t.Fatalf("B's campaign returned %v", err)
		}
		close(proceed)
		l2 := recv(t, elected, "A's second term")
		wantPromptTerms(t, []fenced.Lease{l1, l2})
		stopA()
		if err := recv(t, aDone, "end of A's campaign"); !errors.Is(err, context.Canceled) {
			t.Fatalf("A's campaign returned %v", err)
		}
	})
}

// wantPromptTerms wants terms to be one campaigner's, with consecutive
// fences, each granted before the lease of the one before would have
// expired.
func wantPromptTerms(t *testing.T, terms []fenced.Lease) {
	t.Helper()
	for i := 1; i < len(terms); i++ {
		prev, l := terms[i-1], terms[i]
		if l.Owner != prev.Owner || l.Fence != prev.Fence+1 || !l.DecidedAt.Before(prev.ExpiresAt) {
			t.Fatalf("terms %s: term %d (%+v) is not the next fence, granted before %s", termOwners(terms), i, l, prev.ExpiresAt)
		}
	}
}

// onMessage is a slog handler that signals ch (without blocking) at every
// record whose message is msg.
type onMessage struct {
	msg string
	ch  chan<- struct{}
}

func (h onMessage) Enabled(context.Context, slog.Level) bool { return true }
func (h onMessage) WithAttrs([]slog.Attr) slog.Handler       { return h }
func (h onMessage) WithGroup(string) slog.Handler            { return h }
func (h onMessage) Handle(_ context.Context, r slog.Record) error {
	if r.Message == h.msg {
		select {
		case h.ch <- struct{}{}:
		default:
		}
	}
	return nil
}

// termOwners is the owners of terms in order, for a failure message.
func termOwners(terms []fenced.Lease) string {
	var s []string
	for _, l := range terms {
		s = append(s, fmt.Sprintf("%s:%d", l.Owner, l.Fence))
	}
	return "[" + strings.Join(s, " ") + "]"
}
