// Package display writes the text users give fenced (lease names, owners,
// resource keys, kinds, queues, values, errors) for people to read, in one
// way everywhere: the command's tables and messages, and the library's
// error messages.
//
// Two different strings must never look the same. strconv.Quote escapes
// what is not printable, but a zero-width space, a word joiner or a
// right-to-left mark is a format character some terminals show as nothing,
// and "é" written as e plus a combining acute (U+0301) prints like the
// precomposed é (U+00E9) though they are different names. Quote escapes
// those too: every character that is not a graphic character showing as
// itself (control, format, private use, unassigned, surrogate and
// default-ignorable characters, spaces other than U+0020), and, in a string
// that is not in Unicode normal form C, every combining mark, so that a
// decomposed name is told from its precomposed twin. Look-alikes from
// different scripts (Latin a, Cyrillic а) are graphic and print as they
// are.
//
// Width measures text in terminal columns (wide East Asian characters take
// two, combining marks none) and Table aligns columns by it.
package display

import (
	"fmt"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"golang.org/x/text/unicode/norm"
	"golang.org/x/text/width"
)

// Quote is s in double quotes, with every character escaped that would not
// show as itself (see the package doc), as Go escapes it: \n, \x01, \u200b,
// \U0001f600, \" and \\.
func Quote(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	escape(&b, s, true)
	b.WriteByte('"')
	return b.String()
}

// Name is s for a table cell or a "field: value" line: as it is when it
// shows as itself and is one word (no space, quote or backslash, not
// empty), else Quote(s).
func Name(s string) string {
	if s != "" && Plain(s) && !strings.ContainsAny(s, " \"\\") {
		return s
	}
	return Quote(s)
}

// Text is free text (a value, an error) for the end of a line: as it is
// when every character shows as itself, else Quote(s). Spaces, quotes and
// backslashes are shown as they are; the empty string is "".
func Text(s string) string {
	if s != "" && Plain(s) {
		return s
	}
	return Quote(s)
}

// Plain reports whether every character of s shows as itself: Quote would
// escape nothing but quotes and backslashes.
func Plain(s string) bool {
	nfc := norm.NFC.IsNormalString(s)
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && n == 1 || needsEscape(r, i == 0, nfc) {
			return false
		}
		i += n
	}
	return true
}

// escape writes s with its characters escaped as Quote does; quotes and
// backslashes are escaped when quoted.
func escape(b *strings.Builder, s string, quoted bool) {
	nfc := norm.NFC.IsNormalString(s)
	escaped := true // a mark at the start has nothing to combine with
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		wasEscaped := escaped
		escaped = true
		switch {
		case r == utf8.RuneError && n == 1:
			fmt.Fprintf(b, `\x%02x`, s[i])
		case quoted && (r == '"' || r == '\\'):
			b.WriteByte('\\')
			b.WriteRune(r)
		case needsEscape(r, wasEscaped, nfc):
			// strconv knows the short forms (\n, \t, \x01); anything
			// it would print as is gets \u or \U.
			q := strconv.QuoteRuneToASCII(r)
			q = q[1 : len(q)-1]
			if !strings.HasPrefix(q, `\`) {
				q = fmt.Sprintf(`\u%04x`, r)
				if r > 0xffff {
					q = fmt.Sprintf(`\U%08x`, r)
				}
			}
			b.WriteString(q)
		default:
			b.WriteRune(r)
			escaped = false
		}
		i += n
	}
}

// needsEscape reports whether r does not show as itself: it is not graphic
// (control, format, private use, surrogate, unassigned, a space other than
// U+0020), it is default-ignorable (fillers, variation selectors, the
// combining grapheme joiner), or it is a combining mark with nothing of its
// own to combine with (at the start, after an escape: afterEscape) or in
// text that is not in normal form C (nfc false).
func needsEscape(r rune, afterEscape, nfc bool) bool {
	switch {
	case r == ' ':
		return false
	case !unicode.IsGraphic(r), unicode.Is(unicode.Zs, r):
		return true
	case unicode.Is(unicode.Other_Default_Ignorable_Code_Point, r), unicode.Is(unicode.Variation_Selector, r):
		return true
	case unicode.Is(unicode.M, r):
		return afterEscape || !nfc
	}
	return false
}

// Width is the number of terminal columns s takes as it is written (escape
// it first): two for wide and fullwidth East Asian characters, none for
// combining marks and zero-width characters, one for the rest.
func Width(s string) int {
	w := 0
	for _, r := range s {
		w += runeWidth(r)
	}
	return w
}

func runeWidth(r rune) int {
	switch {
	case unicode.Is(unicode.Mn, r), unicode.Is(unicode.Me, r), unicode.Is(unicode.Cf, r),
		unicode.Is(unicode.Other_Default_Ignorable_Code_Point, r), unicode.Is(unicode.Variation_Selector, r):
		return 0
	case r < 0x20 || r == 0x7f:
		return 0
	}
	switch width.LookupRune(r).Kind() {
	case width.EastAsianWide, width.EastAsianFullwidth:
		return 2
	}
	return 1
}
