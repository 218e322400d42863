package fenced

import (
	"errors"
	"strings"
	"testing"
)

func TestCheckStorableJSON(t *testing.T) {
	nest := func(n int) string { return strings.Repeat("[", n) + strings.Repeat("]", n) }
	for _, c := range []struct {
		json string
		ok   bool
	}{
		{`{"a": [1, 2.5, -3e10, "x", true, null]}`, true},
		{`"\ud83d\ude00 \u00e9 \n"`, true}, // a surrogate pair, escapes
		{`[0, -0.0, 0e-99999, 1e308, 5e-324]`, true},
		{nest(MaxJSONDepth), true},
		{nest(MaxJSONDepth + 1), false},
		{`"\u0000"`, false},
		{`{"k": "a\u0000b"}`, false},
		{`"\ud800"`, false},       // high surrogate alone
		{`"\udc00"`, false},       // low surrogate alone
		{`"\ud800\u0041"`, false}, // high surrogate, then not a low one
		{`"\\u0000"`, true},       // an escaped backslash, then text
		{"\"\xff\"", false},       // not UTF-8
		{`1e1000000`, false},      // beyond a float64 (PostgreSQL: numeric overflow)
		{`[1e-16384]`, false},     // rounds to zero
		{`{"n": 1e309}`, false},
		{`{"b": 1.10, "a": 2, "b": 3}`, false}, // PostgreSQL would keep {"a": 2, "b": 3}
		{`{"a": 1, "\u0061": 2}`, false},       // the same key, escaped
		{`[{"k": {"x": 1, "x": 1}}]`, false},
		{`{"a": {"a": 1}, "b": [{"a": 1}, {"a": 2}]}`, true},
	} {
		err := validJSON("args", []byte(c.json))
		if (err == nil) != c.ok {
			t.Errorf("validJSON(%q) = %v; want ok=%v", c.json, err, c.ok)
		}
		if err != nil && !errors.Is(err, ErrInvalid) {
			t.Errorf("validJSON(%q) = %v; want ErrInvalid", c.json, err)
		}
	}
}
