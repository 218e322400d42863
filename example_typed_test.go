package fenced_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/fenced/fenced"
	_ "github.com/fenced/fenced/driver/sqlitedriver"
)

// SendEmail is a typed kind: its type names the kind ("send_email") and
// gives its jobs' default options.
type SendEmail struct {
	To      string `json:"to"`
	Subject string `json:"subject"`
}

func (SendEmail) Kind() string { return "send_email" }

func (SendEmail) EnqueueOptions() fenced.EnqueueOptions {
	return fenced.EnqueueOptions{Queue: "email", MaxAttempts: 5}
}

// A typed kind binds the producer and the worker to one kind string: the
// producer enqueues a value with EnqueueArgs, the worker registers a
// handler of that type with HandleKind, and neither spells the kind.
func ExampleHandleKind() {
	ctx := context.Background()
	dir, _ := os.MkdirTemp("", "fenced-example-")
	defer os.RemoveAll(dir)
	c, _ := fenced.Open(ctx, "sqlite:"+filepath.Join(dir, "fenced.db"), fenced.Config{})
	defer c.Close()
	c.Migrate(ctx)

	job, _, err := c.EnqueueArgs(ctx, SendEmail{To: "ada@example.com", Subject: "Welcome"}, nil)
	if err != nil {
		panic(err)
	}
	fmt.Printf("enqueued %s job %d on queue %s, %d attempts at most\n", job.Kind, job.ID, job.Queue, job.MaxAttempts)

	w, _ := c.NewWorker(fenced.WorkerConfig{Queues: map[string]int{"email": 4}})
	if err := fenced.HandleKind(w, func(ctx context.Context, j *fenced.JobRun, m SendEmail) error {
		j.SetOutput(map[string]string{"sent_to": m.To})
		return nil
	}); err != nil {
		panic(err)
	}
	// A second handler for the same kind is refused, not a silent replacement.
	err = w.Handle("send_email", func(context.Context, *fenced.JobRun) error { return nil })
	fmt.Println("second handler:", err)
	if err := w.Start(ctx); err != nil {
		fmt.Println("start:", err)
	}
	_ = w.Stop(ctx)

	w, _ = c.NewWorker(fenced.WorkerConfig{Queues: map[string]int{"email": 4}})
	fenced.HandleKind(w, func(ctx context.Context, j *fenced.JobRun, m SendEmail) error {
		j.SetOutput(map[string]string{"sent_to": m.To})
		return nil
	})
	w.Start(ctx)
	j := waitFinished(ctx, c, job.ID)
	fmt.Printf("job %d: %s, output %s\n", j.ID, j.State, j.Output)
	stop, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	w.Stop(stop)

	// Output:
	// enqueued send_email job 1 on queue email, 5 attempts at most
	// second handler: fenced: kind "send_email" has a handler already: registering it twice would replace one silently
	// start: fenced: the worker's handlers: fenced: kind "send_email" has a handler already: registering it twice would replace one silently
	// job 1: succeeded, output {"sent_to":"ada@example.com"}
}
