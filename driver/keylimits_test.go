package driver

import "testing"

// KeyLimits resolves a key's limit as jobKeyLimitSQL does: the key's own,
// else its job's kind's default, else the queue's; 0 without a key or any
// declared limit.
func TestKeyLimitsResolveLikeTheClaimSQL(t *testing.T) {
	var none KeyLimits
	if got := none.Limit("a", "k"); got != 0 {
		t.Fatalf("no limits: %d", got)
	}
	var l KeyLimits
	l.Add("", "", 3)   // queue default
	l.Add("a", "", 2)  // kind a's default
	l.Add("", "k1", 5) // key k1's own
	for _, c := range []struct {
		kind, key string
		want      int
	}{
		{"a", "k1", 5}, // own beats kind
		{"b", "k1", 5},
		{"a", "k2", 2}, // kind beats queue
		{"b", "k2", 3}, // queue
		{"a", "", 0},   // no key, no limit
	} {
		if got := l.Limit(c.kind, c.key); got != c.want {
			t.Errorf("Limit(%q, %q) = %d, want %d", c.kind, c.key, got, c.want)
		}
	}
}
