package fencedotel

import (
	"encoding/json"
	"testing"
	"unicode/utf8"
)

// decoded is what encoding/json reads of the three members, the
// reference w3cMembers must agree with.
func decoded(b []byte) (w3cCarrier, bool) {
	var all map[string]json.RawMessage
	if json.Unmarshal(b, &all) != nil || all == nil {
		return w3cCarrier{}, false
	}
	var c w3cCarrier
	for k, v := range all {
		var s string
		if json.Unmarshal(v, &s) == nil {
			c.Set(k, s)
		}
	}
	return c, true
}

// checkMembers holds w3cMembers to encoding/json on b: where it reads b
// itself, the same members; where it cannot, b has an escape or is not an
// object (and the caller decodes it).
func checkMembers(t *testing.T, b []byte) {
	t.Helper()
	got, ok := w3cMembers(b)
	want, isObject := decoded(b)
	if !ok {
		if isObject && !hasEscape(b) {
			t.Errorf("w3cMembers(%s) could not read an object without escapes", b)
		}
		return
	}
	if !isObject {
		t.Errorf("w3cMembers(%s) read what is not a JSON object", b)
		return
	}
	var g w3cCarrier
	if got != nil {
		g = *got
	}
	if g != want {
		t.Errorf("w3cMembers(%s) = %+v, encoding/json reads %+v", b, g, want)
	}
}

func hasEscape(b []byte) bool {
	for _, c := range b {
		if c == '\\' {
			return true
		}
	}
	return false
}

// The scan of a job's metadata reads the trace context members as
// encoding/json does, past members of every kind, nested ones included.
func TestW3CMembers(t *testing.T) {
	for _, s := range []string{
		`{"traceparent":"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"}`,
		` { "a" : [1, {"traceparent": "inner"}, "x]"], "traceparent" : "tp", "b": {"c": {"d": []}}, "tracestate": "ts", "baggage": "k=v", "n": -1.5e3, "t": true, "z": null } `,
		`{"tracestate": "only"}`,
		`{"traceparent": 5, "tracestate": "s"}`,
		`{}`, ` {} `, `{"a": "}"}`, `{"a": "\"", "traceparent": "x"}`, `{"traceparent": "a\"b"}`, `{"trace\u0070arent": "x"}`,
		`[]`, `"traceparent"`, `null`, `{"a": 1,}`, `{"a"}`, `{"traceparent": "x"`, `{"a": [1, 2}`, ``,
	} {
		checkMembers(t, []byte(s))
	}
}

func FuzzW3CMembers(f *testing.F) {
	f.Add([]byte(`{"a": [1, {"b": "}"}], "traceparent": "tp", "tracestate": "ts"}`))
	f.Add([]byte(`{"baggage": "k=v", "x": null}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		if json.Valid(b) && utf8.Valid(b) { // as a job's metadata is
			checkMembers(t, b)
		}
	})
}
