package sqlitedriver_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/fenced/fenced/fencedtype"
)

func TestHeartbeatJobs(t *testing.T) {
	t.Parallel()
	ctx := context.Background()

	t.Run("ExtendsAndReportsLostAndCancelRequested", func(t *testing.T) {
		t.Parallel()
		d, _ := setupJobs(t)
		enqueue(t, d, newJob("q"), newJob("q"), newJob("q"))
		jobs := claim(t, d, "q", "w", 3, time.Minute)
		if _, err := d.CancelJob(ctx, jobs[1].ID); err != nil {
			t.Fatal(err)
		}
		refs := []fencedtype.JobRef{{ID: jobs[0].ID, Fence: 1}, {ID: jobs[1].ID, Fence: 1}, {ID: jobs[2].ID, Fence: 7}, {ID: 9999, Fence: 1}}
		res, err := d.HeartbeatJobs(ctx, refs, time.Hour)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(res.Extended, []int64{jobs[0].ID, jobs[1].ID}) ||
			!slices.Equal(res.CancelRequested, []int64{jobs[1].ID}) ||
			!slices.Equal(res.Lost, []int64{jobs[2].ID, 9999}) {
			t.Fatalf("heartbeat %+v", res)
		}
		j, _ := getJob(t, d, jobs[0].ID)
		if !j.LeaseExpiresAt.After(*jobs[0].LeaseExpiresAt) || j.LeaseExpiresAt.Sub(j.DecidedAt) < 59*time.Minute {
			t.Fatalf("lease not extended: was %v, is %v at %v", jobs[0].LeaseExpiresAt, j.LeaseExpiresAt, j.DecidedAt)
		}
		if res.ExpiresAt.After(*j.LeaseExpiresAt) || res.ExpiresAt.Sub(j.DecidedAt) < 59*time.Minute {
			t.Fatalf("reported expiry %v, stored %v at %v", res.ExpiresAt, j.LeaseExpiresAt, j.DecidedAt)
		}
	})

	t.Run("AfterExpiryIsLost", func(t *testing.T) {
		t.Parallel()
		d, _ := setupJobs(t)
		ref := claimOne(t, d, 3, "w", 20*time.Millisecond)
		waitExpired(t, d, ref.ID)
		res, err := d.HeartbeatJobs(ctx, []fencedtype.JobRef{ref}, time.Hour)
		if err != nil {
			t.Fatal(err)
		}
		if len(res.Extended) != 0 || !slices.Equal(res.Lost, []int64{ref.ID}) {
			t.Fatalf("heartbeat after expiry: %+v", res)
		}
	})
}
