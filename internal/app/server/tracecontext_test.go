package server

import (
	"encoding/json"
	"net/http"
	"reflect"
	"testing"

	"github.com/fenced/fenced/internal/test/testdb"
)

const (
	testParent = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
	bodyParent = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"
)

// POST /v1/jobs with a W3C traceparent (and tracestate) header stores
// them in the job's metadata, beside the body's members, unless the
// body's metadata has a traceparent of its own: the body wins. The
// metadata read back is the one a worker gets.
func TestEnqueueCarriesTheTraceHeaders(t *testing.T) {
	t.Parallel()
	e := setup(t, testdb.SQLite(t), Config{})
	enqueue := func(body map[string]any, header ...string) map[string]any {
		t.Helper()
		r := e.do("POST", "/v1/jobs", body, header...)
		if r.status != http.StatusCreated {
			t.Fatalf("enqueue %v with %v: %d %s", body, header, r.status, r.raw)
		}
		var j jobOut
		e.decode(r, &j)
		var meta map[string]any
		if j.Metadata != nil {
			if err := json.Unmarshal(e.job(j.ID).Job.Metadata, &meta); err != nil {
				t.Fatal(err)
			}
		}
		return meta
	}
	want := func(what string, got, want map[string]any) {
		t.Helper()
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("%s: metadata %v, want %v", what, got, want)
		}
	}
	want("traceparent and tracestate", enqueue(map[string]any{"kind": "k"}, "traceparent", testParent, "tracestate", "rojo=00f067aa0ba902b7, congo=t61rcWkgMzE"),
		map[string]any{"traceparent": testParent, "tracestate": "rojo=00f067aa0ba902b7,congo=t61rcWkgMzE"})
	want("beside the body's", enqueue(map[string]any{"kind": "k", "metadata": map[string]any{"tenant": "42"}}, "traceparent", testParent),
		map[string]any{"traceparent": testParent, "tenant": "42"})
	want("the body wins", enqueue(map[string]any{"kind": "k", "metadata": map[string]any{"traceparent": bodyParent}}, "traceparent", testParent, "tracestate", "rojo=1"),
		map[string]any{"traceparent": bodyParent})
	want("a body's tracestate stays", enqueue(map[string]any{"kind": "k", "metadata": map[string]any{"tracestate": "mine=1"}}, "traceparent", testParent, "tracestate", "rojo=1"),
		map[string]any{"traceparent": testParent, "tracestate": "mine=1"})
	want("an invalid traceparent is ignored", enqueue(map[string]any{"kind": "k"}, "traceparent", "00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01", "tracestate", "rojo=1"), nil)
	want("an invalid tracestate is ignored", enqueue(map[string]any{"kind": "k"}, "traceparent", testParent, "tracestate", "no-equals"),
		map[string]any{"traceparent": testParent})
	want("no header", enqueue(map[string]any{"kind": "k", "metadata": map[string]any{"a": 1}}), map[string]any{"a": float64(1)})

	// The body's metadata is checked as without the header.
	for _, bad := range []string{`{"kind": "k", "metadata": [1]}`, `{"kind": "k", "metadata": {"a": 1, "a": 2}}`, `{"kind": "k", "metadata": "x"}`} {
		r := e.fails(http.StatusBadRequest, codeInvalid, "POST", "/v1/jobs", bad, "traceparent", testParent)
		if r.body["field"] != "metadata" {
			t.Fatalf("%s: field %v: %s", bad, r.body["field"], r.raw)
		}
	}
}

// A traceparent is carried only when it is one by the W3C rules; two
// traceparent headers are none; the tracestate headers join as one list,
// carried when it is a list of key=value members within the bounds.
func TestTraceHeadersRules(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		parent string
		ok     bool
	}{
		{testParent, true},
		{"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-00", true},
		{"01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-abc-12", true},
		{"01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01", true},
		{"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-later", false},
		{"01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01later", false},
		{"ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01", false},
		{"00-00000000000000000000000000000000-00f067aa0ba902b7-01", false},
		{"00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01", false},
		{"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-0", false},
		{"00-4bf92f3577b34da6a3ce929d0e0e473-600f067aa0ba902b7-01", false},
		{"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902bg-01", false},
		{"01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-\"x", false},
		{"", false},
	} {
		h := http.Header{}
		h.Set("traceparent", tc.parent)
		got := withTraceHeaders(h, nil)
		if (got != nil) != tc.ok {
			t.Errorf("traceparent %q: metadata %s, want carried %v", tc.parent, got, tc.ok)
		}
	}
	two := http.Header{}
	two.Add("traceparent", testParent)
	two.Add("traceparent", bodyParent)
	if got := withTraceHeaders(two, nil); got != nil {
		t.Errorf("two traceparent headers: metadata %s", got)
	}
	many := ""
	for i := range 33 {
		if i > 0 {
			many += ","
		}
		many += "k=v"
	}
	for _, tc := range []struct {
		states []string
		want   string
	}{
		{[]string{"a=1", " b=2 ,c=3"}, "a=1,b=2,c=3"},
		{[]string{"a=1,,b=2"}, "a=1,b=2"},
		{[]string{many[4:]}, many[4:]},
		{[]string{many}, ""},
		{[]string{"a=x\x01"}, ""},
		{[]string{"a=1", "=2"}, ""},
		{[]string{" "}, ""},
	} {
		h := http.Header{"Traceparent": {testParent}, "Tracestate": tc.states}
		var meta map[string]string
		if err := json.Unmarshal(withTraceHeaders(h, nil), &meta); err != nil {
			t.Fatal(err)
		}
		if meta["tracestate"] != tc.want || meta["traceparent"] != testParent {
			t.Errorf("tracestate %q: metadata %v, want tracestate %q", tc.states, meta, tc.want)
		}
	}
}
