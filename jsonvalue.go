package fenced

import (
	"unicode/utf8"

	"github.com/fenced/fenced/fencedtype"
	"github.com/fenced/fenced/internal/lib/jsoncheck"
)

// MaxJSONDepth is the deepest nesting of arrays and objects accepted in a
// job's args, output and progress. MariaDB's JSON_VALID refuses 32 levels,
// and what one backend accepts every backend must store.
const MaxJSONDepth = 31

// checkStorableJSON refuses JSON that is valid but that a backend would
// refuse to store, so that the caller gets an invalid-input error before any
// statement runs rather than a database error after: text that is not
// UTF-8, nesting deeper than MaxJSONDepth, the escape \u0000 (PostgreSQL's
// jsonb cannot hold it), a UTF-16 surrogate escape without its pair, and
// numbers a float64 cannot hold (beyond ±1.8e308, or so small they round to
// zero), which PostgreSQL's jsonb or MySQL's JSON refuse, and a key given
// twice in one object, which PostgreSQL's jsonb collapses to the last while
// SQLite and MariaDB keep the text as written (so what one backend accepts,
// every backend reads back the same). b must be valid JSON (json.Valid).
// The scan is jsoncheck's, which the HTTP service uses on request bodies
// too.
func checkStorableJSON(field string, b []byte) error {
	if !utf8.Valid(b) {
		return fencedtype.Invalid(field, "is not valid UTF-8")
	}
	f := jsoncheck.Scan(b, jsoncheck.Options{MaxDepth: MaxJSONDepth, Numbers: true})
	switch f.Problem {
	case jsoncheck.TooDeep:
		return fencedtype.Invalid(field, "nests arrays and objects deeper than %d levels", MaxJSONDepth)
	case jsoncheck.NULEscape:
		return fencedtype.Invalid(field, `holds the escape \u0000, which PostgreSQL cannot store`)
	case jsoncheck.LoneSurrogate:
		return fencedtype.Invalid(field, `holds the escape \u%04x, half of a UTF-16 surrogate pair`, f.Rune)
	case jsoncheck.NumberTooLarge:
		return fencedtype.Invalid(field, "holds the number %.40s, beyond the range of a float64", f.Number)
	case jsoncheck.NumberTooSmall:
		return fencedtype.Invalid(field, "holds the number %.40s, too small for a float64", f.Number)
	case jsoncheck.DuplicateKey:
		return fencedtype.Invalid(field, "gives the key %.40q twice in one object; the backends would not store it alike", f.Key)
	}
	return nil
}

// validJSON checks JSON text given by the caller: valid and storable. Text
// that is not JSON is refused with the reason and where: "is not valid
// JSON: invalid character '}' … at line 1, column 9".
func validJSON(field string, b []byte) error {
	if msg := jsoncheck.SyntaxError(b); msg != "" {
		return fencedtype.Invalid(field, "is not valid JSON: %s", msg)
	}
	return checkStorableJSON(field, b)
}
