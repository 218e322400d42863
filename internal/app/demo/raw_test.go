package demo

import (
	"slices"
	"testing"
)

func TestRebindReordersArguments(t *testing.T) {
	q, args := rebind(`UPDATE t SET owner = $2 WHERE name = $1 AND n = $10 OR $2 = ''`,
		[]any{"name", "owner", 3, 4, 5, 6, 7, 8, 9, "ten"})
	if want := `UPDATE t SET owner = ? WHERE name = ? AND n = ? OR ? = ''`; q != want {
		t.Errorf("query = %q, want %q", q, want)
	}
	if want := []any{"owner", "name", "ten", "owner"}; !slices.Equal(args, want) {
		t.Errorf("args = %v, want %v", args, want)
	}
}

func TestRebindLeavesALoneDollar(t *testing.T) {
	if q, args := rebind(`SELECT '$' || $1`, []any{1}); q != `SELECT '$' || ?` || len(args) != 1 {
		t.Errorf("got %q %v", q, args)
	}
}
