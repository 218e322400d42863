package display

import (
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"
)

// TestQuoteIsGoSyntaxAndLosesNothing: Quote's output is a Go string literal
// that unquotes to the input (so different inputs never quote alike), and
// is itself plain.
func TestQuoteIsGoSyntaxAndLosesNothing(t *testing.T) {
	seeds := []string{"", "a", "é", "e\u0301", "\u200b", "\"", "\\", "\x00", "\xff\xfe", "\u0301\u0301", "😀\ufe0f", "a\u00a0\u3000b"}
	r := rand.New(rand.NewPCG(1, 2))
	pool := []rune{'a', ' ', '"', '\\', '\n', 0x7f, 0xe9, 0x301, 0x200b, 0x202e, 0xa0, 0x3164, 0xfe0f, 0x65e5, 0x1f600, 0xe000, 0xfffd, 0x10ffff}
	for range 2000 {
		var b strings.Builder
		for range r.IntN(8) {
			if r.IntN(10) == 0 {
				b.WriteByte(byte(0x80 + r.IntN(0x80))) // a stray byte
			} else {
				b.WriteRune(pool[r.IntN(len(pool))])
			}
		}
		seeds = append(seeds, b.String())
	}
	for _, s := range seeds {
		q := Quote(s)
		back, err := strconv.Unquote(q)
		if err != nil || back != s {
			t.Fatalf("Quote(%+q) = %s, which unquotes to %+q (%v)", s, q, back, err)
		}
		if !Plain(q) || !utf8.ValidString(q) {
			t.Fatalf("Quote(%+q) = %+q is not plain", s, q)
		}
	}
}

func TestNameAndText(t *testing.T) {
	for _, c := range []struct{ in, name, text string }{
		{"report", "report", "report"},
		{"", `""`, `""`},
		{"a b", `"a b"`, "a b"},
		{`a"b`, `"a\"b"`, `a"b`},
		{"cafe\u0301", `"cafe\u0301"`, `"cafe\u0301"`},
		{"a\u200b", `"a\u200b"`, `"a\u200b"`},
		{"line\nbreak", `"line\nbreak"`, `"line\nbreak"`},
		{"say \"\u0301", `"say \"\u0301"`, `"say \"\u0301"`}, // a mark on a quote is escaped, as Quote escapes it
	} {
		if got := Name(c.in); got != c.name {
			t.Errorf("Name(%+q) = %s, want %s", c.in, got, c.name)
		}
		if got := Text(c.in); got != c.text {
			t.Errorf("Text(%+q) = %s, want %s", c.in, got, c.text)
		}
	}
}

func TestWidth(t *testing.T) {
	for _, c := range []struct {
		in   string
		want int
	}{
		{"abc", 3}, {"café", 4}, {"cafe\u0301", 4}, {"日本語", 6}, {"😀", 2}, {"a\u200bb", 2}, {"—", 1}, {"", 0},
	} {
		if got := Width(c.in); got != c.want {
			t.Errorf("Width(%+q) = %d, want %d", c.in, got, c.want)
		}
	}
}

func TestTableAlignsByWidth(t *testing.T) {
	var b strings.Builder
	Table{Rows: [][]string{
		{"NAME", "OWNER", "FENCE"},
		{"日本", "a", "1"},
		{"cafe\u0301", "bb", "22"},
		{"x", "", ""},
	}}.Write(&b)
	want := "NAME  OWNER  FENCE\n" +
		"日本  a      1\n" +
		"cafe\u0301  bb     22\n" +
		"x\n"
	if b.String() != want {
		t.Errorf("table:\n%s\nwant:\n%s", b.String(), want)
	}
}

func TestTableWrapsToMaxWidth(t *testing.T) {
	long := "released together, each claims in a transaction (BEGIN IMMEDIATE (one writer)); the winner holds it 300ms"
	rows := [][]string{
		{"#", "WHO", "ACTION", "EXPECTED", "OBSERVED", ""},
		{"1", "A+B", long, "one claims it (fence 1); the other waits for the write lock, then finds nothing", "A claimed it (fence 1), held it 302ms; B got nothing after 339ms", "ok"},
		{"2", "—", "enqueue job 2", "queued", "queued", "MISMATCH"},
	}
	var b strings.Builder
	Table{Rows: rows, MaxWidth: 100, Wrap: []bool{false, false, true, true, true, false}}.Write(&b)
	out := b.String()
	for _, line := range strings.Split(strings.TrimSuffix(out, "\n"), "\n") {
		if Width(line) > 100 || strings.HasSuffix(line, " ") {
			t.Errorf("line of width %d (or ending in a space): %q", Width(line), line)
		}
	}
	// Nothing is lost: the words of every cell are all there, in order.
	joined := strings.Join(strings.Fields(out), " ")
	for _, r := range rows {
		for _, cell := range r {
			if !strings.Contains(joined, strings.Join(strings.Fields(cell), " ")) && !wrappedIn(out, cell) {
				t.Errorf("cell %q lost in:\n%s", cell, out)
			}
		}
	}
	// A word wider than the column is cut, not lost.
	b.Reset()
	Table{Rows: [][]string{{"a", strings.Repeat("x", 30)}}, MaxWidth: 20, Wrap: []bool{false, true}, MinWrap: 5}.Write(&b)
	if got := strings.Count(b.String(), "x"); got != 30 {
		t.Errorf("cut word: %d x in\n%s", got, b.String())
	}
}

// wrappedIn reports whether the words of cell appear in out in order.
func wrappedIn(out, cell string) bool {
	rest := out
	for _, w := range strings.Fields(cell) {
		i := strings.Index(rest, w)
		if i < 0 {
			return false
		}
		rest = rest[i+len(w):]
	}
	return true
}
