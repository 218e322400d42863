package fencedtype

import "testing"

func TestQuoteTellsLookAlikesApart(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"report", `"report"`},
		{"caf\u00e9", `"café"`},        // precomposed: as it is
		{"cafe\u0301", `"cafe\u0301"`}, // decomposed: the mark escaped
		{"q\u0301", `"q́"`},            // NFC with a mark nothing composes: as it is
		{"\u0301x", `"\u0301x"`},       // a mark with nothing before it
		{"a\u200bb", `"a\u200bb"`},     // zero-width space
		{"a\u2060b", `"a\u2060b"`},     // word joiner
		{"\u202eabc", `"\u202eabc"`},   // right-to-left override
		{"a\u00a0b", `"a\u00a0b"`},     // no-break space
		{"a b", `"a b"`},               // a space is a space
		{"\u3164", `"\u3164"`},         // Hangul filler, blank but a letter
		{"\u2764\ufe0f", `"❤\ufe0f"`},  // variation selector
		{"tab\there", `"tab\there"`},   // control characters as Go writes them
		{"x\x01", `"x\x01"`},
		{"x\xff", `"x\xff"`},                  // not UTF-8
		{`say "hi" \o/`, `"say \"hi\" \\o/"`}, // quotes and backslashes
		{"日本語", `"日本語"`},
		{"\U0001f600", `"😀"`},
		{"\U000e0041", `"\U000e0041"`}, // a tag character
	} {
		if got := Quote(c.in); got != c.want {
			t.Errorf("Quote(%+q) = %s, want %s", c.in, got, c.want)
		}
	}
	if Quote("caf\u00e9") == Quote("cafe\u0301") || Quote("ab") == Quote("a\u200bb") {
		t.Error("look-alikes quoted alike")
	}
}
