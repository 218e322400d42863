package fenced_test

import (
	"context"
	"errors"
	"log/slog"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/fenced/fenced/internal/test/logbuf"

	"github.com/fenced/fenced"
)

// A Worker on a database that was never migrated refuses to start with a
// *NotMigratedError, and says so on the Client's logger: a program that
// drops Start's error still hears that its worker does nothing.
func TestWorkerOnUnmigratedDatabaseLogsItsRefusal(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var out logbuf.Buffer
	log := slog.New(slog.NewTextHandler(&out, nil))
	c, err := fenced.Open(ctx, "sqlite:"+filepath.Join(t.TempDir(), "new.db"), fenced.Config{Logger: log})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if c.Logger() != log {
		t.Fatal("Client.Logger is not Config.Logger")
	}
	w, err := c.NewWorker(fenced.WorkerConfig{Owner: "w1"})
	if err != nil {
		t.Fatal(err)
	}
	w.Handle("noop", func(context.Context, *fenced.JobRun) error { return nil })
	err = w.Start(ctx)
	var nm *fenced.NotMigratedError
	if !errors.As(err, &nm) {
		t.Fatalf("Start on an unmigrated database: %v, want a *NotMigratedError", err)
	}
	line := out.String()
	for _, want := range []string{"level=ERROR", "refuses to start", "owner=w1", "migrat"} {
		if !strings.Contains(line, want) {
			t.Errorf("log %q lacks %q", line, want)
		}
	}

	// A worker given its own logger logs there, not on the Client's.
	var own logbuf.Buffer
	w2, err := c.NewWorker(fenced.WorkerConfig{Owner: "w2", Logger: slog.New(slog.NewTextHandler(&own, nil))})
	if err != nil {
		t.Fatal(err)
	}
	w2.Handle("noop", func(context.Context, *fenced.JobRun) error { return nil })
	if err := w2.Start(ctx); !errors.As(err, &nm) {
		t.Fatalf("Start: %v", err)
	}
	if !strings.Contains(own.String(), "owner=w2") || strings.Contains(out.String(), "owner=w2") {
		t.Errorf("worker's own logger got %q; client's got %q", own.String(), out.String())
	}
}

// With no Logger the Client logs nothing, and Logger returns a logger that
// discards.
func TestClientWithoutLoggerDiscards(t *testing.T) {
	t.Parallel()
	c, err := fenced.Open(context.Background(), "sqlite:"+filepath.Join(t.TempDir(), "x.db"), fenced.Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if c.Logger() == nil || c.Logger().Enabled(context.Background(), slog.LevelError) {
		t.Fatalf("the default logger is %v, want one that discards", c.Logger())
	}
}
