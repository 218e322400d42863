package drivertest

import (
	"strings"
	"testing"

	"github.com/fenced/fenced"
)

// runReportProgress: a running attempt's progress is stored with the job
// (docs/design.md §6.4).
func runReportProgress(t *testing.T, b Backend) {
	t.Run("ProgressIsStored", func(t *testing.T) {
		t.Parallel()
		e := setup(t, b)
		j := e.enqueue(t, fenced.EnqueueParams{Kind: "k"})
		a := e.claimOne(t, "A", long)
		p := fenced.Progress{Stage: "copy", Counters: map[string]int64{"rows": 42}}
		wantNoErr(t, errAt(e.c.ReportProgress(ctx(t), a.Ref(), p)), "progress")
		if got, _ := e.job(t, j.ID); string(got.Progress) == "" || !strings.Contains(string(got.Progress), `"rows"`) {
			t.Fatalf("progress = %s", got.Progress)
		}
	})
}
