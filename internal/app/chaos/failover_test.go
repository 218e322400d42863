package chaos_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/fenced/fenced/internal/app/chaos"
	"github.com/fenced/fenced/internal/test/testdb"
)

// The failover fault on one server, with a command that only takes time
// (internal/test/failover runs the real one, against a cluster that fails over):
// the other faults go on while it runs, the report names them, and the
// work done after its first write is counted by the database clock. With no
// promotion the timeline stays as it was.
func TestFailoverCommandRunsBesideOtherFaults(t *testing.T) {
	if testing.Short() {
		t.Skip("-short")
	}
	o := chaos.DefaultOptions()
	o.URL, o.Log = testdb.Postgres(t), logWriter{t}
	o.Duration = 16 * time.Second
	o.Failover = []string{"sleep", "4"} // from 8 s to 12 s: a pause and a connection kill are due meanwhile
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	rep, err := chaos.Run(ctx, o)
	if err != nil {
		t.Fatal(err)
	}
	var table strings.Builder
	rep.WriteTable(&table)
	t.Log("\n" + table.String())
	if rep.AnomalyCount != 0 || rep.Failovers != 1 {
		t.Fatalf("%d anomalies, %d failovers: %v", rep.AnomalyCount, rep.Failovers, rep.Anomalies)
	}
	n := 0
	for _, c := range rep.FaultsDuringFailover {
		n += c
	}
	if n == 0 {
		t.Errorf("no fault was injected during the %.1f s of the failover command", rep.ResumeSeconds)
	}
	if rep.TimelineBefore == 0 || rep.TimelineAfter != rep.TimelineBefore {
		t.Errorf("timeline %d before the command and %d after, want the same one", rep.TimelineBefore, rep.TimelineAfter)
	}
	w := rep.AfterFailover
	if w == nil || w.Enqueued == 0 || w.Claimed == 0 || w.Completed == 0 || w.Grants == 0 {
		t.Fatalf("work after the failover command: %v; want some of each", w)
	}
	// The window is the last 4 s of 16: less than its share of what was
	// enqueued in all (every enqueue of the window is also in the total).
	if w.Enqueued >= rep.Enqueued || w.Completed >= rep.Succeeded {
		t.Errorf("work after the failover command: %v, of %d enqueued and %d succeeded in all: the window counts more than it holds", w, rep.Enqueued, rep.Succeeded)
	}
}
