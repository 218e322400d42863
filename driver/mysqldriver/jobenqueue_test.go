package mysqldriver_test

import (
	"encoding/json"
	"fmt"
	"sync"
	"testing"

	"github.com/fenced/fenced"
)

// TestConcurrentBatchEnqueuesGetTheirOwnJobs: batches inserted at once from
// several clients (each run of jobs without a key goes in one multiple-row
// INSERT when the server hands out consecutive ids) come back as the jobs
// each caller asked for, in its order.
func TestConcurrentBatchEnqueuesGetTheirOwnJobs(t *testing.T) {
	t.Parallel()
	url, _ := setup(t)
	var wg sync.WaitGroup
	for g := range 4 {
		c := open(t, url)
		wg.Go(func() {
			for round := range 3 {
				ps := make([]fenced.EnqueueParams, 300)
				for i := range ps {
					ps[i] = fenced.EnqueueParams{Kind: fmt.Sprintf("k%d", g), Args: map[string]int{"g": g, "i": i}}
					if i%50 == 7 {
						ps[i].IdempotencyKey = fmt.Sprintf("g%d-r%d-%d", g, round, i)
					}
				}
				res, err := c.EnqueueMany(ctx(t), nil, ps)
				if err != nil {
					t.Errorf("enqueue: %v", err)
					return
				}
				last := int64(0)
				for i, r := range res {
					var got struct{ G, I int }
					if err := json.Unmarshal(r.Job.Args, &got); err != nil || got.G != g || got.I != i {
						t.Errorf("job %d of caller %d has args %s", i, g, r.Job.Args)
						return
					}
					if r.Job.ID <= last {
						t.Errorf("ids do not ascend in input order: %d after %d", r.Job.ID, last)
						return
					}
					last = r.Job.ID
				}
			}
		})
	}
	wg.Wait()
}
