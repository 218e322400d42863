package fenced

import (
	"bytes"
	"testing"
)

// TestUniqueKeyCanonical: the key ignores key order and spacing at every
// depth, keeps numbers as written, tells an absent args key from null, and
// is not shared across kinds, queues (with ByQueue) or key choices.
func TestUniqueKeyCanonical(t *testing.T) {
	key := func(u UniqueOptions, kind, queue, args string) []byte {
		t.Helper()
		k, err := uniqueKey(u, kind, queue, []byte(args))
		if err != nil {
			t.Fatalf("%s: %v", args, err)
		}
		if len(k) != 32 {
			t.Fatalf("key of %d bytes", len(k))
		}
		return k
	}
	all := UniqueOptions{ByArgs: true}
	for _, c := range []struct {
		a, b [3]string // kind, queue, args
		ua   UniqueOptions
		ub   UniqueOptions
		same bool
	}{
		{[3]string{"k", "q", `{"a":1,"b":{"c":[1,{"y":2,"x":"é"}]}}`}, [3]string{"k", "q", ` { "b" : { "c" : [ 1 , { "x" : "\u00e9" , "y" : 2 } ] } , "a" : 1 } `}, all, all, true},
		{[3]string{"k", "q", `{"a":1}`}, [3]string{"k", "q", `{"a":1.0}`}, all, all, false},
		{[3]string{"k", "q", `{"a":1}`}, [3]string{"k2", "q", `{"a":1}`}, all, all, false},
		{[3]string{"k", "q", `{"a":1}`}, [3]string{"k", "q2", `{"a":1}`}, all, all, true},
		{[3]string{"k", "q", `{"a":1}`}, [3]string{"k", "q2", `{"a":1}`}, UniqueOptions{ByArgs: true, ByQueue: true}, UniqueOptions{ByArgs: true, ByQueue: true}, false},
		{[3]string{"k", "q", `{"a":1}`}, [3]string{"k", "q", `{"a":2}`}, UniqueOptions{}, UniqueOptions{}, true},
		{[3]string{"k", "q", `{"a":1}`}, [3]string{"k", "q", `{"a":1}`}, UniqueOptions{}, all, false},
		{[3]string{"k", "q", `{"u":1,"n":1}`}, [3]string{"k", "q", `{"n":2,"u":1}`}, UniqueOptions{ArgsKeys: []string{"u"}}, UniqueOptions{ArgsKeys: []string{"u"}}, true},
		{[3]string{"k", "q", `{"u":1}`}, [3]string{"k", "q", `{"u":1,"v":null}`}, UniqueOptions{ArgsKeys: []string{"u", "v"}}, UniqueOptions{ArgsKeys: []string{"v", "u"}}, false},
		{[3]string{"k", "q", `{"u":1,"v":2}`}, [3]string{"k", "q", `{"v":2,"u":1}`}, UniqueOptions{ArgsKeys: []string{"u", "v"}}, UniqueOptions{ArgsKeys: []string{"v", "u"}}, true},
	} {
		ka, kb := key(c.ua, c.a[0], c.a[1], c.a[2]), key(c.ub, c.b[0], c.b[1], c.b[2])
		if bytes.Equal(ka, kb) != c.same {
			t.Errorf("%v %+v and %v %+v: same key %v, want %v", c.a, c.ua, c.b, c.ub, !c.same, c.same)
		}
	}
}
