package fenced

import (
	"context"
	"errors"
	"path/filepath"
	"testing"
	"time"
)

// A worker that claims a job again (its older attempt was recovered) runs
// the new attempt only: the older one is cancelled as lost at once, and its
// end never removes the newer attempt from the heartbeat.
func TestReclaimBySameWorkerCancelsTheOlderAttempt(t *testing.T) {
	ctx := context.Background()
	c, err := Open(ctx, "sqlite:"+filepath.Join(t.TempDir(), "x.db"), Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	w, err := c.NewWorker(WorkerConfig{})
	if err != nil {
		t.Fatal(err)
	}
	w.runCtx = ctx
	w.Handle("wait", func(ctx context.Context, j *JobRun) error { <-ctx.Done(); return ctx.Err() })
	now := time.Now()
	old := w.track(&Job{ID: 7, Fence: 1}, now)
	w.jobsWG.Add(1)
	done := make(chan struct{})
	go func() { defer close(done); w.run(&Job{ID: 7, Fence: 1, Kind: "wait"}, old) }()
	newer := w.track(&Job{ID: 7, Fence: 2}, now)
	if cause := context.Cause(old.ctx); !errors.Is(cause, ErrJobLost) {
		t.Fatalf("older attempt's context: %v", cause)
	}
	<-done // the older attempt ends, writing nothing: it is lost
	w.mu.Lock()
	got := w.active[7]
	w.mu.Unlock()
	if got != newer || newer.ctx.Err() != nil {
		t.Fatalf("the newer attempt was dropped or cancelled: %+v", got)
	}
}
