package jobbench

import (
	"fmt"
	"io"
	"strings"
	"sync"
	"time"
)

// Snapshot is the progress of a run's phase.
type Snapshot struct {
	Phase    string        // "insert" or "work"
	Elapsed  time.Duration // since the phase began
	Done     int64         // jobs inserted (insert) or worked (work) so far
	Total    int64         // jobs the phase ends at; 0 in continuous mode
	Rate     float64       // jobs/s since the previous snapshot
	Inserted int64         // continuous work phase: jobs the producer inserted
}

// reporter sends a Snapshot of done() to o.Progress every o.ProgressEvery
// until stopped.
type reporter struct {
	stopped chan struct{}
	wg      sync.WaitGroup
}

func (b *bench) report(phase string, total int64, done, inserted func() int64) *reporter {
	r := &reporter{stopped: make(chan struct{})}
	if b.o.Progress == nil {
		return r
	}
	r.wg.Add(1)
	go func() {
		defer r.wg.Done()
		start := time.Now()
		t := time.NewTicker(b.o.ProgressEvery)
		defer t.Stop()
		last, lastAt := done(), start
		for {
			select {
			case <-r.stopped:
				return
			case now := <-t.C:
				n := done()
				s := Snapshot{Phase: phase, Elapsed: now.Sub(start), Done: n, Total: total,
					Rate: float64(n-last) / now.Sub(lastAt).Seconds()}
				if inserted != nil {
					s.Inserted = inserted()
				}
				b.o.Progress(s)
				last, lastAt = n, now
			}
		}
	}()
	return r
}

func (r *reporter) stop() {
	close(r.stopped)
	r.wg.Wait()
}

// Printer renders snapshots: on a terminal one line rewritten in place,
// elsewhere one line per snapshot.
type Printer struct {
	W   io.Writer
	TTY bool

	mu    sync.Mutex
	width int // of the line on screen (TTY)
}

// Print shows one snapshot.
func (p *Printer) Print(s Snapshot) {
	line := s.String()
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.TTY {
		fmt.Fprintln(p.W, line)
		return
	}
	pad := max(0, p.width-len(line))
	fmt.Fprintf(p.W, "\r%s%s", line, strings.Repeat(" ", pad))
	p.width = len(line)
}

// Line prints a line that stays, above the progress line on a terminal.
func (p *Printer) Line(line string) {
	p.Clear()
	p.mu.Lock()
	defer p.mu.Unlock()
	fmt.Fprintln(p.W, line)
}

// Clear removes the progress line from a terminal, before the summary.
func (p *Printer) Clear() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.TTY && p.width > 0 {
		fmt.Fprintf(p.W, "\r%s\r", strings.Repeat(" ", p.width))
		p.width = 0
	}
}

// String is the snapshot as one progress line.
func (s Snapshot) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "bench: %-6s %6.1fs  ", s.Phase, s.Elapsed.Seconds())
	verb := "worked"
	if s.Phase == "insert" {
		verb = "inserted"
	}
	if s.Total > 0 {
		fmt.Fprintf(&b, "%s %d/%d (%.0f%%)", verb, s.Done, s.Total, 100*float64(s.Done)/float64(s.Total))
	} else {
		fmt.Fprintf(&b, "%s %d", verb, s.Done)
	}
	fmt.Fprintf(&b, "  %.0f jobs/s", s.Rate)
	if s.Inserted > 0 {
		fmt.Fprintf(&b, "  inserted %d", s.Inserted)
	}
	return b.String()
}
