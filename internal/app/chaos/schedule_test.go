package chaos

import "testing"

func TestScheduleIsReproducibleAndHasEveryKind(t *testing.T) {
	o := DefaultOptions()
	o.Seed = 3713683890083173951
	a, b := schedule(&o, faultConnKill), schedule(&o, faultConnKill)
	if len(a) != len(b) {
		t.Fatalf("two schedules of one seed differ: %d and %d faults", len(a), len(b))
	}
	for i := range a {
		if a[i] != b[i] {
			t.Fatalf("fault %d differs: %+v and %+v", i, a[i], b[i])
		}
	}
	count := map[faultKind]int{}
	for i, f := range a {
		count[f.kind]++
		if f.at < 0 || f.at >= o.Duration {
			t.Errorf("fault %d at %s, outside the run", i, f.at)
		}
		if i > 0 && f.at < a[i-1].at {
			t.Errorf("fault %d at %s before fault %d at %s", i, f.at, i-1, a[i-1].at)
		}
		if f.kind == faultPause && (f.length <= o.JobTTL || f.length > 4*o.JobTTL) {
			t.Errorf("pause %d lasts %s; want past the job TTL %s", i, f.length, o.JobTTL)
		}
	}
	t.Logf("%v", count)
	for _, k := range []faultKind{faultPause, faultKill, faultConnKill} {
		if count[k] == 0 {
			t.Errorf("no %s scheduled", k)
		}
	}
	o.RestartPostgres = true
	n := 0
	for _, f := range schedule(&o, faultConnKill) {
		if f.kind == faultRestart {
			n++
			if f.at != o.Duration/2 {
				t.Errorf("restart at %s, want %s", f.at, o.Duration/2)
			}
		}
	}
	if n != 1 {
		t.Errorf("%d restarts scheduled, want 1", n)
	}
}

// TestScheduleOnSQLiteStallsInsteadOfKillingConnections: with the stall as
// the backend's disconnect fault, the schedule has stalls, each past the
// job TTL as a pause is, and no connection kill; the other faults are the
// same as with connection kills.
func TestScheduleOnSQLiteStallsInsteadOfKillingConnections(t *testing.T) {
	o := DefaultOptions()
	o.Seed = 3713683890083173951
	count := map[faultKind]int{}
	for i, f := range schedule(&o, faultStall) {
		count[f.kind]++
		if f.kind == faultStall && (f.length <= o.JobTTL || f.length > 4*o.JobTTL) {
			t.Errorf("stall %d lasts %s; want past the job TTL %s", i, f.length, o.JobTTL)
		}
	}
	if count[faultStall] == 0 || count[faultConnKill] != 0 {
		t.Errorf("faults %v: want stalls and no connection kill", count)
	}
	pg := map[faultKind]int{}
	for _, f := range schedule(&o, faultConnKill) {
		pg[f.kind]++
	}
	if count[faultPause] != pg[faultPause] || count[faultKill] != pg[faultKill] {
		t.Errorf("pauses and kills differ: %v with stalls, %v with connection kills", count, pg)
	}
}
