package server

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"reflect"
	"strings"
	"testing"
)

// Tags given over HTTP come back with the job; GET /v1/jobs?tag= filters by
// any of them, or all with tag_match=all; bad tags, at enqueue or in the
// filter, are refused with 400 naming the field and nothing is written.
func TestJobTagsOverHTTP(t *testing.T) {
	t.Parallel()
	allDBs(t, func(t *testing.T, db newDB) {
		e := setup(t, db(t), Config{})
		ab := e.enqueue(map[string]any{"kind": "k", "tags": []string{"a", "b"}})
		if !reflect.DeepEqual(ab.Tags, []string{"a", "b"}) {
			t.Fatalf("enqueued tags %q", ab.Tags)
		}
		a := e.enqueue(map[string]any{"kind": "k", "tags": []string{"a"}})
		none := e.enqueue(map[string]any{"kind": "k", "tags": nil})
		if r := e.ok("GET", fmt.Sprintf("/v1/jobs/%d", none.ID), nil); !strings.Contains(string(r.raw), `"tags":null`) {
			t.Fatalf("a job without tags: %s", r.raw)
		}
		ids := func(query string) []int64 {
			t.Helper()
			var list struct{ Jobs []struct{ ID int64 } }
			e.decode(e.ok("GET", "/v1/jobs?"+query, nil), &list)
			var out []int64
			for _, j := range list.Jobs {
				out = append(out, j.ID)
			}
			return out
		}
		if got := ids("tag=a"); !reflect.DeepEqual(got, []int64{ab.ID, a.ID}) {
			t.Errorf("tag=a: %v", got)
		}
		if got := ids("tag=a&tag=b&tag_match=all"); !reflect.DeepEqual(got, []int64{ab.ID}) {
			t.Errorf("tag=a&tag=b&tag_match=all: %v", got)
		}
		if got := ids("tag=b&tag=zz&tag_match=any"); !reflect.DeepEqual(got, []int64{ab.ID}) {
			t.Errorf("tag=b&tag=zz: %v", got)
		}
		for _, bad := range []any{[]string{"a b"}, []string{""}, []string{"x", "x"}, []string{strings.Repeat("t", 101)}, "a"} {
			r := e.fails(http.StatusBadRequest, codeInvalid, "POST", "/v1/jobs", map[string]any{"kind": "k", "tags": bad})
			if f := r.body["field"]; f != "tags" && f != "body" {
				t.Errorf("bad tags %v: field %v: %s", bad, f, r.raw)
			}
		}
		for _, q := range []string{"tag=" + url.QueryEscape("a b"), "tag=a&tag=a", "tag_match=all", "tag=a&tag_match=some", "tag="} {
			e.fails(http.StatusBadRequest, codeInvalid, "GET", "/v1/jobs?"+q, nil)
		}
		if got := ids(""); len(got) != 3 {
			t.Fatalf("%d jobs after the refused enqueues, want 3", len(got))
		}
	})
}

// POST /v1/jobs/{id}/metadata merges a JSON Merge Patch into the running
// attempt's metadata; a fence that is not the current attempt's, or a merge
// after the job finished, is 409 stale_fence; a patch that is not an
// object, or a merged object past 64 KiB, is 400; neither changes it.
func TestMergeMetadataOverHTTP(t *testing.T) {
	t.Parallel()
	allDBs(t, func(t *testing.T, db newDB) {
		e := setup(t, db(t), Config{})
		j := e.enqueue(map[string]any{"kind": "k", "metadata": map[string]any{"a": 1, "b": map[string]int{"c": 2}}})
		c := e.claimOne("w", 60000)
		path := jobPath(j.ID, "metadata")
		var rep struct {
			ID, Fence int64
			Metadata  map[string]any
		}
		e.decode(e.ok("POST", path, map[string]any{"fence": c.Fence, "patch": map[string]any{"a": nil, "b": map[string]int{"d": 3}}}), &rep)
		want := map[string]any{"b": map[string]any{"c": 2.0, "d": 3.0}}
		if rep.ID != j.ID || rep.Fence != c.Fence || !reflect.DeepEqual(rep.Metadata, want) {
			t.Fatalf("merge answered %+v, want metadata %v", rep, want)
		}
		stored := func() map[string]any {
			var m map[string]any
			if err := json.Unmarshal(e.job(j.ID).Job.Metadata, &m); err != nil {
				t.Fatal(err)
			}
			return m
		}
		e.fails(http.StatusConflict, codeStaleFence, "POST", path, map[string]any{"fence": c.Fence + 1, "patch": map[string]int{"x": 1}})
		for _, bad := range []map[string]any{
			{"fence": c.Fence, "patch": []int{1}},
			{"fence": c.Fence, "patch": nil},
			{"fence": c.Fence},
			{"patch": map[string]int{"x": 1}},
			{"fence": c.Fence, "patch": map[string]string{"big": strings.Repeat("x", 70<<10)}},
		} {
			e.fails(http.StatusBadRequest, codeInvalid, "POST", path, bad)
		}
		big := strings.Repeat("x", 40<<10)
		e.ok("POST", path, map[string]any{"fence": c.Fence, "patch": map[string]string{"big": big}})
		r := e.fails(http.StatusBadRequest, codeInvalid, "POST", path, map[string]any{"fence": c.Fence, "patch": map[string]string{"big2": big}})
		if r.body["field"] != "metadata" {
			t.Fatalf("a merge past the bound: %s", r.raw)
		}
		e.ok("POST", jobPath(j.ID, "complete"), map[string]any{"fence": c.Fence})
		e.fails(http.StatusConflict, codeStaleFence, "POST", path, map[string]any{"fence": c.Fence, "patch": map[string]int{"late": 1}})
		if got := stored(); got["x"] != nil || got["late"] != nil || got["big2"] != nil || got["big"] != big {
			t.Fatalf("refused merges changed the metadata: keys %v", reflect.ValueOf(got).MapKeys())
		}
	})
}
