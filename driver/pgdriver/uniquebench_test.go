package pgdriver_test

import (
	"context"
	"testing"

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
}
