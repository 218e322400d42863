package jsoncheck

import (
	"encoding/json"
	"strings"
	"testing"
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
		{`{"k": "a\u0000b"}`, Options{}, Finding{Problem: NULEscape}},
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
	for _, s := range []string{`"\u00`, `"\`, `"\ud800\u`, `"\ud800\`, `[1e`, `"\u0000"`, `{"a":"\udc00"}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		Scan(b, Options{MaxDepth: 31, Numbers: true})
	})
}
