package drivertest

import (
	"errors"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/fenced/fenced"
)

// runJobTags: a job's tags are stored by every enqueue path and read back
// as given (EnqueueTx is EnqueueMany of one), none (nil or empty) read back as nil; a listing filtered by
// tags keeps the jobs carrying any of them, or all of them; bad tags are
// refused and nothing is written (docs/design.md §6.2).
func runJobTags(t *testing.T, b Backend) {
	t.Run("StoredByEveryEnqueueAndReadBack", func(t *testing.T) {
		t.Parallel()
		e := setup(t, b)
		tags := []string{"tenant:42", "NULL", "a/b.c-d_e"}
		one := e.enqueue(t, fenced.EnqueueParams{Kind: "k", Tags: tags})
		wantTags(t, "Enqueue's answer", one.Tags, tags)
		none := e.enqueue(t, fenced.EnqueueParams{Kind: "k"})
		wantTags(t, "a job without tags", none.Tags, nil)
		empty := e.enqueue(t, fenced.EnqueueParams{Kind: "k", Tags: []string{}})
		wantTags(t, "a job with an empty list of tags", empty.Tags, nil)
		keyed := e.enqueue(t, fenced.EnqueueParams{Kind: "k", IdempotencyKey: "key", Tags: []string{"x"}})
		wantTags(t, "keyed Enqueue's answer", keyed.Tags, []string{"x"})
		many, err := e.c.EnqueueMany(ctx(t), nil, []fenced.EnqueueParams{{Kind: "k", Tags: []string{"m1"}}, {Kind: "k"}, {Kind: "k", Tags: []string{"m2", "m3"}}})
		wantNoErr(t, err, "enqueue many")
		wantTags(t, "batch job 1", many[0].Job.Tags, []string{"m1"})
		wantTags(t, "batch job 2", many[1].Job.Tags, nil)
		wantTags(t, "batch job 3", many[2].Job.Tags, []string{"m2", "m3"})
		// A bulk batch that runs now without keys (copied in on PostgreSQL),
		// and one with a delay (inserted).
		_, err = e.c.EnqueueBulk(ctx(t), nil, []fenced.EnqueueParams{{Kind: "bulk", Tags: []string{"b1", "b2"}}, {Kind: "bulk"}})
		wantNoErr(t, err, "enqueue bulk")
		_, err = e.c.EnqueueBulk(ctx(t), nil, []fenced.EnqueueParams{{Kind: "later", Tags: []string{"b3"}, Delay: time.Millisecond}, {Kind: "later", Delay: time.Millisecond}})
		wantNoErr(t, err, "enqueue bulk with a delay")
		want := [][]string{tags, nil, nil, {"x"}, {"m1"}, nil, {"m2", "m3"}, {"b1", "b2"}, nil, {"b3"}, nil}
		jobs, err := e.c.ListJobs(ctx(t), fenced.JobFilter{})
		wantNoErr(t, err, "list")
		if len(jobs) != len(want) {
			t.Fatalf("%d jobs, want %d", len(jobs), len(want))
		}
		for i, j := range jobs {
			wantTags(t, "listed job", j.Tags, want[i])
			got, _ := e.job(t, j.ID)
			wantTags(t, "GetJob", got.Tags, want[i])
		}
		time.Sleep(5 * time.Millisecond) // the delayed jobs' millisecond
		claimed := e.claim(t, fenced.DefaultQueue, "w", 100, long)
		if len(claimed) != len(want) {
			t.Fatalf("claimed %d jobs, want %d", len(claimed), len(want))
		}
		for _, c := range claimed {
			i := slices.IndexFunc(jobs, func(j *fenced.Job) bool { return j.ID == c.ID })
			wantTags(t, "claimed job", c.Tags, want[i])
		}
	})
	t.Run("ListingFiltersByAnyOrAll", func(t *testing.T) {
		t.Parallel()
		e := setup(t, b)
		ab := e.enqueue(t, fenced.EnqueueParams{Kind: "k", Tags: []string{"a", "b"}})
		a := e.enqueue(t, fenced.EnqueueParams{Kind: "k", Tags: []string{"a"}})
		bc := e.enqueue(t, fenced.EnqueueParams{Kind: "k", Tags: []string{"c", "b"}})
		e.enqueue(t, fenced.EnqueueParams{Kind: "k"})
		other := e.enqueue(t, fenced.EnqueueParams{Kind: "other", Tags: []string{"a", "b", "c"}})
		ids := func(f fenced.JobFilter) []int64 {
			t.Helper()
			jobs, err := e.c.ListJobs(ctx(t), f)
			wantNoErr(t, err, "list")
			var out []int64
			for _, j := range jobs {
				out = append(out, j.ID)
			}
			return out
		}
		for _, c := range []struct {
			name string
			f    fenced.JobFilter
			want []int64
		}{
			{"any of one", fenced.JobFilter{Tags: []string{"a"}}, []int64{ab.ID, a.ID, other.ID}},
			{"any of two", fenced.JobFilter{Tags: []string{"a", "c"}, TagsMatch: fenced.TagsAny}, []int64{ab.ID, a.ID, bc.ID, other.ID}},
			{"all of two", fenced.JobFilter{Tags: []string{"b", "a"}, TagsMatch: fenced.TagsAll}, []int64{ab.ID, other.ID}},
			{"all of three", fenced.JobFilter{Tags: []string{"a", "b", "c"}, TagsMatch: fenced.TagsAll}, []int64{other.ID}},
			{"all of one", fenced.JobFilter{Tags: []string{"c"}, TagsMatch: fenced.TagsAll}, []int64{bc.ID, other.ID}},
			{"a tag no job has", fenced.JobFilter{Tags: []string{"z"}}, nil},
			{"with a kind", fenced.JobFilter{Tags: []string{"a"}, Kind: "k"}, []int64{ab.ID, a.ID}},
			{"newest first, a page", fenced.JobFilter{Tags: []string{"b"}, Desc: true, Limit: 2}, []int64{other.ID, bc.ID}},
			{"after an id", fenced.JobFilter{Tags: []string{"b"}, AfterID: ab.ID}, []int64{bc.ID, other.ID}},
		} {
			if got := ids(c.f); !reflect.DeepEqual(got, c.want) {
				t.Errorf("%s: ids %v, want %v", c.name, got, c.want)
			}
		}
	})
	t.Run("RefusesBadTags", func(t *testing.T) {
		t.Parallel()
		e := setup(t, b)
		many := make([]string, fenced.MaxTags+1)
		for i := range many {
			many[i] = "t" + strings.Repeat("x", i)
		}
		for name, tags := range map[string][]string{
			"an empty tag":    {""},
			"a space":         {"a b"},
			"a comma":         {"a,b"},
			"a quote":         {`a"b`},
			"a brace":         {"{a}"},
			"not ASCII":       {"é"},
			"too long":        {strings.Repeat("x", fenced.MaxTagBytes+1)},
			"a repeat":        {"a", "b", "a"},
			"too many":        many,
			"a NUL":           {"a\x00"},
			"a backslash":     {`a\b`},
			"an equals sign":  {"a=b"},
			"an ampersand":    {"a&b"},
			"a trailing line": {"a\n"},
		} {
			_, _, err := e.c.Enqueue(ctx(t), fenced.EnqueueParams{Kind: "k", Tags: tags})
			var inv *fenced.InvalidError
			if !errors.As(err, &inv) || inv.Field != "tags" {
				t.Errorf("tags %s: %v, want an *InvalidError of tags", name, err)
			}
			_, err = e.c.EnqueueBulk(ctx(t), nil, []fenced.EnqueueParams{{Kind: "k"}, {Kind: "k", Tags: tags}})
			if !errors.As(err, &inv) {
				t.Errorf("bulk tags %s: %v, want an *InvalidError", name, err)
			}
			_, err = e.c.ListJobs(ctx(t), fenced.JobFilter{Tags: tags})
			if !errors.As(err, &inv) {
				t.Errorf("listing by tags %s: %v, want an *InvalidError", name, err)
			}
		}
		// The longest tag and the most tags are taken.
		e.enqueue(t, fenced.EnqueueParams{Kind: "k", Tags: append(many[:fenced.MaxTags-1:fenced.MaxTags-1], strings.Repeat("y", fenced.MaxTagBytes))})
		for _, f := range []fenced.JobFilter{{TagsMatch: "some"}, {TagsMatch: fenced.TagsAll}} {
			if _, err := e.c.ListJobs(ctx(t), f); err == nil {
				t.Errorf("listing with tag match %q (tags %v) was taken", f.TagsMatch, f.Tags)
			}
		}
		jobs, err := e.c.ListJobs(ctx(t), fenced.JobFilter{})
		wantNoErr(t, err, "list")
		if len(jobs) != 1 {
			t.Fatalf("%d jobs, want the one with valid tags", len(jobs))
		}
	})
}

// wantTags fails unless got is want (nil and empty alike are none).
func wantTags(t *testing.T, what string, got, want []string) {
	t.Helper()
	if len(want) == 0 {
		if got != nil {
			t.Fatalf("%s: tags %q, want nil", what, got)
		}
		return
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("%s: tags %q, want %q", what, got, want)
	}
}
