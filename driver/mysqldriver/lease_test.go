package mysqldriver_test

import (
	"errors"
	"testing"
	"time"

	"github.com/fenced/fenced"
)

// TestNamesAreComparedByteForByte: neither case nor trailing spaces make
// two lease names or owners one (a _ci or PAD SPACE collation would).
func TestNamesAreComparedByteForByte(t *testing.T) {
	t.Parallel()
	_, c := setup(t)
	for _, name := range []string{"job", "JOB", "job ", "jöb"} {
		l, err := c.AcquireLease(ctx(t), name, "A", time.Minute)
		must(t, err, "acquire "+name)
		if l.Fence != 1 {
			t.Fatalf("%q got fence %d: it shares a row with another name", name, l.Fence)
		}
	}
	if _, err := c.AcquireLease(ctx(t), "job", "A ", time.Minute); !errors.Is(err, fenced.ErrHeld) {
		t.Fatalf("owner \"A \" acquired A's lease: %v", err)
	}
}
