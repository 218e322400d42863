package fenced

import (
	"testing"
	"time"
)

// Campaign's waits spread from 3/4 to 5/4 of RetryEvery, so campaigners
// started together do not retry in step.
func TestJitteredStaysWithinAQuarterAndSpreads(t *testing.T) {
	const d = 100 * time.Millisecond
	seen := map[time.Duration]bool{}
	for range 1000 {
		j := jittered(d)
		if j < d*3/4 || j > d*5/4 {
			t.Fatalf("jittered(%s) = %s, outside 75ms to 125ms", d, j)
		}
		seen[j] = true
	}
	if len(seen) < 100 {
		t.Fatalf("%d distinct waits in 1000, want them spread", len(seen))
	}
}
