package pgdriver_test

import (
	"context"
	"testing"
	"time"

	"github.com/fenced/fenced"
)

// BenchmarkUniqueEnqueue compares unique-by-args enqueues with plain ones
// on PostgreSQL, in one run: one job per Enqueue, and batches of 1,000
// through EnqueueBulk (b.N counts jobs). Each unique job has args of its
// own, so every one is inserted: the cost measured is the key, the lookup
// and the index entry, not repeats.
func BenchmarkUniqueEnqueue(b *testing.B) {
	ctx := context.Background()
	for _, unique := range []bool{false, true} {
		name := "Plain"
		var u *fenced.UniqueOptions
		if unique {
			name, u = "UniqueByArgs", &fenced.UniqueOptions{ByArgs: true}
		}
		b.Run("Single/"+name, func(b *testing.B) {
			c := openPool(b, Backend.NewURL(b), 1)
			if _, err := c.Migrate(ctx); err != nil {
				b.Fatal(err)
			}
			b.ResetTimer()
			for i := range b.N {
				if _, _, err := c.Enqueue(ctx, fenced.EnqueueParams{Kind: "k", Args: map[string]int{"i": i}, Unique: u}); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "jobs/s")
		})
		b.Run("Bulk/"+name, func(b *testing.B) {
			c := openPool(b, Backend.NewURL(b), 1)
			if _, err := c.Migrate(ctx); err != nil {
				b.Fatal(err)
			}
			const batch = 1000
			ps := make([]fenced.EnqueueParams, batch)
			b.ResetTimer()
			for done := 0; done < b.N; done += batch {
				for j := range ps {
					ps[j] = fenced.EnqueueParams{Kind: "k", Args: map[string]int{"i": done + j}, Unique: u}
				}
				if _, err := c.EnqueueBulk(ctx, nil, ps); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "jobs/s")
		})
	}
	// Both kinds of batch alternately in one loop, so that the load of a
	// shared machine weighs on both alike: the ratio is the figure to read.
	b.Run("Bulk/Alternating", func(b *testing.B) {
		c := openPool(b, Backend.NewURL(b), 1)
		if _, err := c.Migrate(ctx); err != nil {
			b.Fatal(err)
		}
		const batch = 1000
		ps := make([]fenced.EnqueueParams, batch)
		var spent [2]time.Duration
		jobs := [2]int{}
		b.ResetTimer()
		for done := 0; done < b.N; done += batch {
			for k := range 2 {
				var u *fenced.UniqueOptions
				if k == 1 {
					u = &fenced.UniqueOptions{ByArgs: true}
				}
				for j := range ps {
					ps[j] = fenced.EnqueueParams{Kind: "k", Args: map[string]int{"i": done + j}, Unique: u}
				}
				start := time.Now()
				if _, err := c.EnqueueBulk(ctx, nil, ps); err != nil {
					b.Fatal(err)
				}
				spent[k] += time.Since(start)
				jobs[k] += batch
			}
		}
		plain, unique := float64(jobs[0])/spent[0].Seconds(), float64(jobs[1])/spent[1].Seconds()
		b.ReportMetric(plain, "plain-jobs/s")
		b.ReportMetric(unique, "unique-jobs/s")
		b.ReportMetric(unique/plain, "ratio")
	})
}
