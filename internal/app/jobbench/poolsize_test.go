package jobbench

import "testing"

// TestWithPoolSizeKeepsTheOtherParameters: the pool size is added, a
// parameter with a space keeps it as a space, and a URL that sets its own
// pool size is left alone.
func TestWithPoolSizeKeepsTheOtherParameters(t *testing.T) {
	for in, want := range map[string]string{
		"postgres://u@h/db":                             "postgres://u@h/db?pool_max_conns=8",
		"postgres://u@h/db?options=-c%20jit%3Doff":      "postgres://u@h/db?options=-c%20jit%3Doff&pool_max_conns=8",
		"postgres://u@h/db?application_name=a%2Bb":      "postgres://u@h/db?application_name=a%2Bb&pool_max_conns=8",
		"postgres://u@h/db?pool_max_conns=2&sslmode=no": "postgres://u@h/db?pool_max_conns=2&sslmode=no",
	} {
		if got := withPoolSize(in, 8); got != want {
			t.Errorf("withPoolSize(%q) = %q, want %q", in, got, want)
		}
	}
}
