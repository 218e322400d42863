package pgdriver

import (
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// TestTheJobScannerBindsEveryColumnOfJobColumns: jobColumnCount is the
// number of columns jobColumns lists, and scan binds a destination to each.
func TestTheJobScannerBindsEveryColumnOfJobColumns(t *testing.T) {
	n, depth := 1, 0
	for _, r := range jobColumns {
		switch r {
		case '(':
			depth++
		case ')':
			depth--
		case ',':
			if depth == 0 {
				n++
			}
		}
	}
	if n != jobColumnCount {
		t.Fatalf("jobColumns lists %d columns, jobColumnCount says %d", n, jobColumnCount)
	}
	s := newJobScanner()
	row := rowFunc(func(dest ...any) error {
		if len(dest) != n {
			t.Fatalf("scan gave %d destinations, want %d", len(dest), n)
		}
		for i, d := range dest {
			if d == nil {
				t.Fatalf("destination %d is nil", i)
			}
		}
		*dest[0].(*int64) = 7
		*dest[jobClockColumn].(*time.Time) = time.Unix(1, 0)
		return nil
	})
	j, err := s.scan(row)
	if err != nil || j.ID != 7 || !j.DecidedAt.Equal(time.Unix(1, 0)) {
		t.Fatalf("scanned %+v, %v: the first destination is not the id, or jobClockColumn not the clock", j, err)
	}
}

// rowFunc is a pgx.Row made of its Scan.
type rowFunc func(dest ...any) error

func (f rowFunc) Scan(dest ...any) error { return f(dest...) }

var _ pgx.Row = rowFunc(nil)
