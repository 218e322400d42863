// Package display writes the text users give fenced (lease names, owners,
// resource keys, kinds, queues, values, errors) for people to read, in one
// way everywhere: the command's tables and messages, and the library's
// error messages. The escaping is fencedtype.Quote's, the one the library's
// errors use, so that two different strings never look the same (see its
// doc for what is escaped).
//
// Width measures text in terminal columns (wide East Asian characters take
// two, combining marks none) and Table aligns columns by it.
package display

import (
	"strings"
	"unicode"

	"golang.org/x/text/width"

	"github.com/fenced/fenced/fencedtype"
)

// Quote is s in double quotes, with every character escaped that would not
// show as itself, as Go escapes it: \n, \x01, \u200b, \U0001f600, \" and
// \\ (fencedtype.Quote).
func Quote(s string) string { return fencedtype.Quote(s) }

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

// Plain reports whether every character of s shows as itself: Quote
// escapes nothing in it but quotes and backslashes.
func Plain(s string) bool {
	return Quote(s) == `"`+quotesEscaped.Replace(s)+`"`
}

// quotesEscaped escapes quotes and backslashes, as Quote does.
var quotesEscaped = strings.NewReplacer(`"`, `\"`, `\`, `\\`)

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
