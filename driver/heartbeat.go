package driver

import "github.com/fenced/fenced/fencedtype"

// SplitUnextended completes a heartbeat's result once res.Extended lists
// the jobs the heartbeat extended: every other ref is Busy when current
// lists its id, and Lost otherwise. current reads which of the refs it is
// given are still their job's current running attempt, by the same guard
// as the heartbeat, after it (a row the heartbeat skipped because an open
// transaction of its own attempt held it is still current); it is called
// only when some refs were not extended. A nil current means none can be:
// a backend whose heartbeat never skips a row.
func SplitUnextended(res *fencedtype.HeartbeatResult, refs []fencedtype.JobRef, current func([]fencedtype.JobRef) ([]int64, error)) error {
	extended := make(map[int64]bool, len(res.Extended))
	for _, id := range res.Extended {
		extended[id] = true
	}
	var missing []fencedtype.JobRef
	for _, r := range refs {
		if !extended[r.ID] {
			missing = append(missing, r)
		}
	}
	if len(missing) == 0 {
		return nil
	}
	busy := map[int64]bool{}
	if current != nil {
		ids, err := current(missing)
		if err != nil {
			return err
		}
		for _, id := range ids {
			busy[id] = true
		}
	}
	for _, r := range missing {
		if busy[r.ID] {
			res.Busy = append(res.Busy, r.ID)
		} else {
			res.Lost = append(res.Lost, r.ID)
		}
	}
	return nil
}
