package claimlimit

import (
	"errors"
	"fmt"
	"testing"

	"github.com/fenced/fenced/fencedtype"
)

// Claim runs another round while the last one picked a whole window and
// started some but fewer jobs than are wanted, at most Rounds; an error
// after a round started jobs ends the claim with them.
func TestClaimRounds(t *testing.T) {
	jobs := func(ids ...int64) []*fencedtype.Job {
		var out []*fencedtype.Job
		for _, id := range ids {
			out = append(out, &fencedtype.Job{ID: id})
		}
		return out
	}
	type round struct {
		jobs   []*fencedtype.Job
		picked int
		err    error
	}
	boom := errors.New("boom")
	for _, c := range []struct {
		name   string
		want   int
		rounds []round
		limits string // the limit each round was asked for
		got    string
		err    error
	}{
		{"ShortPickEnds", 10, []round{{jobs(1), 5, nil}}, "[10]", "[1]", nil},
		{"FullWindowGoesOn", 10, []round{{jobs(1), 26, nil}, {jobs(2), 25, nil}, {jobs(3), 3, nil}}, "[10 9 8]", "[1 2 3]", nil},
		{"NothingStartedEnds", 10, []round{{nil, 26, nil}}, "[10]", "[]", nil},
		{"AllWantedEnds", 2, []round{{jobs(1, 2), 18, nil}}, "[2]", "[1 2]", nil},
		{"AtMostRounds", 10, []round{{jobs(1), 26, nil}, {jobs(2), 25, nil}, {jobs(3), 24, nil}, {jobs(4), 23, nil}, {jobs(5), 22, nil}}, "[10 9 8 7]", "[1 2 3 4]", nil},
		{"ErrorAfterStartedKeepsThem", 10, []round{{jobs(1), 26, nil}, {nil, 0, boom}}, "[10 9]", "[1]", nil},
		{"ErrorFirst", 10, []round{{nil, 0, boom}}, "[10]", "[]", boom},
	} {
		t.Run(c.name, func(t *testing.T) {
			var limits []int
			got, err := Claim(c.want, func(limit int) ([]*fencedtype.Job, int, error) {
				r := c.rounds[len(limits)]
				limits = append(limits, limit)
				return r.jobs, r.picked, r.err
			})
			var ids []int64
			for _, j := range got {
				ids = append(ids, j.ID)
			}
			if fmt.Sprint(limits) != c.limits || fmt.Sprint(ids) != c.got || !errors.Is(err, c.err) {
				t.Fatalf("rounds asked %v, claimed %v, err %v; want %s, %s, %v", limits, ids, err, c.limits, c.got, c.err)
			}
		})
	}
}
