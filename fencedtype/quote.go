package fencedtype

import (
	"fmt"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"golang.org/x/text/unicode/norm"
)

// Quote is s in double quotes, as fenced writes a name a user gave it (a
// lease, semaphore or queue name, an owner, a resource key, a kind, a
// value) in its error messages and its command's output. It escapes, as Go
// escapes it (\n, \x01, \u200b, \U0001f600, \" and \\), every character
// that would not show as itself, so that two different strings never look
// the same.
//
// strconv.Quote escapes what is not printable, but a zero-width space, a
// word joiner or a right-to-left mark is a format character some terminals
// show as nothing, and "é" written as e plus a combining acute (U+0301)
// prints like the precomposed é (U+00E9) though they are different names.
// Quote escapes those too: every character that is not a graphic character
// showing as itself (control, format, private use, unassigned, surrogate
// and default-ignorable characters, spaces other than U+0020), a combining
// mark with nothing of its own to combine with (at the start, after an
// escape or a quote), and, in a string that is not in Unicode normal form
// C, every combining mark, so that a decomposed name is told from its
// precomposed twin. Look-alikes from different scripts (Latin a, Cyrillic
// а) are graphic and are written as they are.
func Quote(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	nfc := norm.NFC.IsNormalString(s)
	escaped := true // a mark at the start has nothing to combine with
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		wasEscaped := escaped
		escaped = true
		switch {
		case r == utf8.RuneError && n == 1:
			fmt.Fprintf(&b, `\x%02x`, s[i])
		case r == '"' || r == '\\':
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
	b.WriteByte('"')
	return b.String()
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
