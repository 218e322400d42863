package fencedtest

import (
	"slices"
	"testing"

	"github.com/fenced/fenced"
)

// runMigrations: PendingMigrations says, by reading alone, what Migrate
// would apply, so a program that may not write can tell whether it must.
func runMigrations(t *testing.T, b Backend) {
	t.Run("PendingListsWhatMigrateApplies", func(t *testing.T) {
		t.Parallel()
		c := b.open(t, b.NewURL(t), fenced.Config{})
		pending, err := c.PendingMigrations(ctx(t))
		wantNoErr(t, err, "pending on a fresh database")
		if len(pending) == 0 {
			t.Fatal("a fresh database has no pending migrations")
		}
		for i, v := range pending {
			if v != i+1 {
				t.Fatalf("pending on a fresh database = %v, want every version from 1", pending)
			}
		}
		applied, err := c.Migrate(ctx(t))
		wantNoErr(t, err, "migrate")
		if !slices.Equal(applied, pending) {
			t.Fatalf("migrate applied %v, pending said %v", applied, pending)
		}
		pending, err = c.PendingMigrations(ctx(t))
		wantNoErr(t, err, "pending after migrate")
		if len(pending) != 0 {
			t.Fatalf("pending after migrate = %v, want none", pending)
		}
		applied, err = c.Migrate(ctx(t))
		wantNoErr(t, err, "migrate again")
		if len(applied) != 0 {
			t.Fatalf("migrate again applied %v", applied)
		}
	})
}
