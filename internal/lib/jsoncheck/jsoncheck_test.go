package jsoncheck

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestScan(t *testing.T) {
	deep := func(n int) string { return strings.Repeat("[", n) + strings.Repeat("]", n) }
	all := Options{MaxDepth: 3, Numbers: true}
	for _, c := range []struct {
		json string
		o    Options
		want Finding
	}{
		{`{"a": [1, 2.5, -3e10, "x", true, null]}`, all, Finding{}},
		{`"\ud83d\ude00 \u00e9 \n \\u0000 \\ud800"`, all, Finding{}}, // a pair; escaped backslashes
		{`"\u0000"`, Options{}, Finding{Problem: NULEscape}},
		{`{"k": "a\u0000b"}`, Options{}, Finding{Problem: NULEscape, Member: "k"}},
		{`"\ud800"`, Options{}, Finding{Problem: LoneSurrogate, Rune: 0xd800}},
		{`"\udc00"`, Options{}, Finding{Problem: LoneSurrogate, Rune: 0xdc00}},
		{`"\ud800\u0041"`, Options{}, Finding{Problem: LoneSurrogate, Rune: 0xd800}},
		{`"\ud800\ud800\udc00"`, Options{}, Finding{Problem: LoneSurrogate, Rune: 0xd800}},
		{`"x\ud83d"`, Options{}, Finding{Problem: LoneSurrogate, Rune: 0xd83d}},
		{deep(3), all, Finding{}},
		{deep(4), all, Finding{Problem: TooDeep}},
		{deep(4), Options{}, Finding{}},
		{`[1e400]`, all, Finding{Problem: NumberTooLarge, Number: "1e400"}},
		{`[1e400]`, Options{}, Finding{}},
		{`[1e-400]`, all, Finding{Problem: NumberTooSmall, Number: "1e-400"}},
		{`[0, -0.0, 0e-99999, 1e308, 5e-324]`, all, Finding{}},
		// The first problem in text order.
		{`["\u0000", 1e400]`, all, Finding{Problem: NULEscape}},
		{`[1e400, "\u0000"]`, all, Finding{Problem: NumberTooLarge, Number: "1e400"}},
		// Duplicate keys, always checked, compared as decoded strings.
		{`{"b": 1.10, "a": 2, "b": 3}`, Options{}, Finding{Problem: DuplicateKey, Key: "b", Member: "b"}},
		{`{"a": 1, "\u0061": 2}`, Options{}, Finding{Problem: DuplicateKey, Key: "a", Member: "a"}},
		{`{"\/": 1, "/": 2}`, Options{}, Finding{Problem: DuplicateKey, Key: "/", Member: "/"}},
		{`{"\ud83d\ude00": 1, "😀": 2}`, Options{}, Finding{Problem: DuplicateKey, Key: "😀", Member: "😀"}},
		{`{"": 1, "": 2}`, Options{}, Finding{Problem: DuplicateKey, Key: "", Member: ""}},
		{`{"args": {"a": [{"b": 1, "c": {}, "b": 2}]}}`, Options{}, Finding{Problem: DuplicateKey, Key: "b", Member: "args"}},
		{`[{"k": 1}, {"k": 1, "k": 2}]`, Options{}, Finding{Problem: DuplicateKey, Key: "k"}},
		{`{"a": "a", "b": "a", "c": ["a", "a"], "d": {"a": {"a": 1}}}`, Options{}, Finding{}},
		{`{"a": {"x": 1}, "b": {"x": 1}, "c": [{"x": 1}, {"x": 2}]}`, Options{}, Finding{}},
		{`{"A": 1, "a": 2, "a ": 3, "é": 4, "e\u0301": 5}`, Options{}, Finding{}}, // case and normal forms differ
		{`{"k0":0,"k1":1,"k2":2,"k3":3,"k4":4,"k5":5,"k6":6,"k7":7,"k8":8,"k9":9,"k10":10}`, Options{}, Finding{}},
		{`{"k0":0,"k1":1,"k2":2,"k3":3,"k4":4,"k5":5,"k6":6,"k7":7,"k8":8,"k9":9,"k3":10}`, Options{},
			Finding{Problem: DuplicateKey, Key: "k3", Member: "k3"}},
		// Member names where the problem lies.
		{`{"a": 1, "args": ["\u0000"]}`, Options{}, Finding{Problem: NULEscape, Member: "args"}},
		{`{"a": {"b": [1e400]}}`, all, Finding{Problem: NumberTooLarge, Number: "1e400", Member: "a"}},
	} {
		if !json.Valid([]byte(c.json)) {
			t.Fatalf("case %q is not valid JSON", c.json)
		}
		if got := Scan([]byte(c.json), c.o); got != c.want {
			t.Errorf("Scan(%q, %+v) = %+v, want %+v", c.json, c.o, got, c.want)
		}
	}
}

// FuzzScan: any bytes, valid JSON or not, are scanned without a panic.
func FuzzScan(f *testing.F) {
	for _, s := range []string{`"\u00`, `"\`, `"\ud800\u`, `"\ud800\`, `[1e`, `"\u0000"`, `{"a":"\udc00"}`,
		`{"a`, `{"\u00`, `{"a":1,"a"`, `{"\`, `}"a"`, `{"a":{"b":1,"b`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		Scan(b, Options{MaxDepth: 31, Numbers: true})
		// On text the callers pass (valid JSON, UTF-8) without another
		// problem first, the duplicate keys found are the decoder's.
		got := Scan(b, Options{})
		if !json.Valid(b) || !utf8.Valid(b) || got.Problem != None && got.Problem != DuplicateKey {
			return
		}
		if want := hasDuplicateKey(b); (got.Problem == DuplicateKey) != want {
			t.Fatalf("Scan(%q) = %+v; the decoder finds a duplicate key: %v", b, got, want)
		}
	})
}

// hasDuplicateKey reports, by encoding/json's tokens, whether valid JSON
// text gives a key twice in one object (a lone surrogate or a byte that is
// not UTF-8 decodes to U+FFFD here: the fuzz test passes neither).
func hasDuplicateKey(b []byte) bool {
	dec := json.NewDecoder(bytes.NewReader(b))
	type obj struct {
		keys    map[string]bool
		wantKey bool
	}
	var stack []*obj // nil entries are arrays
	for {
		tok, err := dec.Token()
		if err != nil {
			return false
		}
		if n := len(stack); n > 0 && stack[n-1] != nil && stack[n-1].wantKey {
			if tok == json.Delim('}') {
				stack = stack[:n-1]
				continue
			}
			k := tok.(string)
			if stack[n-1].keys[k] {
				return true
			}
			stack[n-1].keys[k], stack[n-1].wantKey = true, false
			continue
		}
		if n := len(stack); n > 0 && stack[n-1] != nil {
			stack[n-1].wantKey = true
		}
		switch tok {
		case json.Delim('{'):
			stack = append(stack, &obj{keys: map[string]bool{}, wantKey: true})
		case json.Delim('['):
			stack = append(stack, nil)
		case json.Delim(']'):
			stack = stack[:len(stack)-1]
		}
	}
}

func TestSyntaxErrorSaysWhereTheTextStopsBeingJSON(t *testing.T) {
	for _, c := range []struct{ json, want string }{
		{`{"a": 1}`, ""},
		{`{"a": 1,}`, "invalid character '}' looking for beginning of object key string at line 1, column 9"},
		{"{\n  \"a\": 1,\n  \"b\" 2\n}", "invalid character '2' after object key at line 3, column 7"},
		{`{"é": tru}`, "invalid character '}' in literal true (expecting 'e') at line 1, column 10"},
		{`[1, 2`, "unexpected end of JSON input at line 1, column 6"},
		{``, "unexpected end of JSON input at line 1, column 1"},
		{`not json`, "invalid character 'o' in literal null (expecting 'u') at line 1, column 2"},
		{`{} {}`, "invalid character '{' after top-level value at line 1, column 4"},
	} {
		if got := SyntaxError([]byte(c.json)); got != c.want {
			t.Errorf("SyntaxError(%q) = %q, want %q", c.json, got, c.want)
		}
	}
}
