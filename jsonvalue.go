package fenced

import (
	"encoding/json"
	"strconv"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/fenced/fenced/fencedtype"
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
// zero), which PostgreSQL's jsonb or MySQL's JSON refuse. b must be valid
// JSON (json.Valid).
func checkStorableJSON(field string, b []byte) error {
	if !utf8.Valid(b) {
		return fencedtype.Invalid(field, "is not valid UTF-8")
	}
	depth := 0
	for i := 0; i < len(b); {
		switch c := b[i]; {
		case c == '[' || c == '{':
			if depth++; depth > MaxJSONDepth {
				return fencedtype.Invalid(field, "nests arrays and objects deeper than %d levels", MaxJSONDepth)
			}
			i++
		case c == ']' || c == '}':
			depth--
			i++
		case c == '"':
			end, err := checkJSONString(field, b, i+1)
			if err != nil {
				return err
			}
			i = end
		case c == '-' || c >= '0' && c <= '9':
			j := i + 1
			for j < len(b) && isNumberByte(b[j]) {
				j++
			}
			if err := checkJSONNumber(field, string(b[i:j])); err != nil {
				return err
			}
			i = j
		default:
			i++
		}
	}
	return nil
}

// checkJSONString checks the string whose contents start at b[i] and
// returns the index just past its closing quote.
func checkJSONString(field string, b []byte, i int) (int, error) {
	for i < len(b) && b[i] != '"' {
		if b[i] != '\\' {
			i++
			continue
		}
		if b[i+1] != 'u' {
			i += 2
			continue
		}
		r := hex4(b[i+2 : i+6])
		i += 6
		switch {
		case r == 0:
			return 0, fencedtype.Invalid(field, `holds the escape \u0000, which PostgreSQL cannot store`)
		case utf16.IsSurrogate(r):
			ok := r < 0xDC00 && i+6 <= len(b) && b[i] == '\\' && b[i+1] == 'u'
			if ok {
				lo := hex4(b[i+2 : i+6])
				ok = lo >= 0xDC00 && lo <= 0xDFFF
				i += 6
			}
			if !ok {
				return 0, fencedtype.Invalid(field, `holds the escape \u%04x, half of a UTF-16 surrogate pair`, r)
			}
		}
	}
	return i + 1, nil
}

func isNumberByte(c byte) bool {
	return c >= '0' && c <= '9' || c == '.' || c == 'e' || c == 'E' || c == '+' || c == '-'
}

// checkJSONNumber refuses a number a float64 cannot hold.
func checkJSONNumber(field, n string) error {
	f, err := strconv.ParseFloat(n, 64)
	if err != nil {
		return fencedtype.Invalid(field, "holds the number %.40s, beyond the range of a float64", n)
	}
	if f == 0 {
		for _, c := range n {
			if c >= '1' && c <= '9' {
				return fencedtype.Invalid(field, "holds the number %.40s, too small for a float64", n)
			}
			if c == 'e' || c == 'E' {
				break
			}
		}
	}
	return nil
}

// hex4 is the value of four hex digits (b is from valid JSON).
func hex4(b []byte) rune {
	n, _ := strconv.ParseUint(string(b), 16, 32)
	return rune(n)
}

// validJSON checks JSON text given by the caller: valid and storable.
func validJSON(field string, b []byte) error {
	if !json.Valid(b) {
		return fencedtype.Invalid(field, "is not valid JSON")
	}
	return checkStorableJSON(field, b)
}
