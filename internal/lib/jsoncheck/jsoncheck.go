// Package jsoncheck is fenced's one scanner of JSON text for what a JSON
// decoder lets through but the backends do not store alike: the escape
// \u0000 (PostgreSQL's jsonb cannot hold it, and the Go decoder keeps it), a
// UTF-16 surrogate escape without its pair (the Go decoder quietly turns it
// into U+FFFD), a key given twice in one object (PostgreSQL's jsonb keeps
// the last, SQLite and MariaDB keep the text as written, decoders differ on
// which wins), and, when asked, nesting deeper than a limit and numbers a
// float64 cannot hold. The library checks a job's args, output and progress
// with it; the HTTP service checks every request body with it. Each caller
// words the refusal for its own audience; the rule is stated once, here.
package jsoncheck

import (
	"bytes"
	"encoding/json"
	"strconv"
)

// Problem is what makes JSON text unstorable.
type Problem int

// The problems Scan finds.
const (
	// None: nothing was found.
	None Problem = iota
	// NULEscape: a string holds the escape \u0000.
	NULEscape
	// LoneSurrogate: a string holds a UTF-16 surrogate escape (Finding.Rune)
	// that is not the high half followed at once by an escaped low half.
	LoneSurrogate
	// TooDeep: arrays and objects nest deeper than Options.MaxDepth.
	TooDeep
	// NumberTooLarge: a number (Finding.Number) is beyond ±1.8e308, the
	// range of a float64.
	NumberTooLarge
	// NumberTooSmall: a number (Finding.Number) is not zero but so small
	// that a float64 rounds it to zero.
	NumberTooSmall
	// DuplicateKey: an object gives a key (Finding.Key) more than once.
	// Keys are compared as the strings they decode to, so "a" and "\u0061"
	// are the same key.
	DuplicateKey
)

// Finding is the first problem in the text, in text order.
type Finding struct {
	Problem Problem
	Rune    rune   // LoneSurrogate: the surrogate escape found alone
	Number  string // NumberTooLarge, NumberTooSmall: the number as written
	Key     string // DuplicateKey: the key given twice, decoded
	// Member is, when the text is an object, the (decoded) key of its
	// member whose key or value holds the problem; empty otherwise.
	Member string
}

// Options select the checks beyond the strings and the keys, which are
// always checked.
type Options struct {
	// MaxDepth, when positive, is the deepest nesting of arrays and objects
	// accepted.
	MaxDepth int
	// Numbers checks that every number fits a float64.
	Numbers bool
}

// Scan returns the first problem of b, which must be valid JSON text
// (json.Valid); on anything else it returns without panicking, but what it
// finds is then unspecified. UTF-8 validity is not its concern.
func Scan(b []byte, o Options) Finding {
	var (
		stack  []frame // the arrays and objects open at b[i]
		member string  // the top-level object's member being read
	)
	found := func(f Finding) Finding {
		f.Member = member
		return f
	}
	for i := 0; i < len(b); {
		switch c := b[i]; {
		case c == '[' || c == '{':
			if len(stack)+1 > o.MaxDepth && o.MaxDepth > 0 {
				return found(Finding{Problem: TooDeep})
			}
			stack = push(stack, c == '{')
			i++
		case c == ']' || c == '}':
			if len(stack) > 0 {
				stack = stack[:len(stack)-1]
			}
			i++
		case c == ',':
			if n := len(stack); n > 0 && stack[n-1].object {
				stack[n-1].wantKey = true
			}
			i++
		case c == '"':
			end, f := scanString(b, i+1)
			if f.Problem != None {
				return found(f)
			}
			if n := len(stack); n > 0 && stack[n-1].wantKey && end <= len(b) && b[end-1] == '"' && end-i >= 2 {
				top := &stack[n-1]
				top.wantKey = false
				key := decodeKey(b[i:end])
				if n == 1 {
					member = string(key)
				}
				if !top.add(key) {
					return found(Finding{Problem: DuplicateKey, Key: string(key)})
				}
			}
			i = end
		case o.Numbers && (c == '-' || c >= '0' && c <= '9'):
			j := i + 1
			for j < len(b) && isNumberByte(b[j]) {
				j++
			}
			if f := checkNumber(string(b[i:j])); f.Problem != None {
				return found(f)
			}
			i = j
		default:
			i++
		}
	}
	return Finding{}
}

// frame is an array or object open during a scan: of an object, whether a
// key comes next and the keys it has given.
type frame struct {
	object  bool
	wantKey bool
	keys    [][]byte            // the keys given, while few
	set     map[string]struct{} // the keys given, once many
}

// smallObject is how many keys an object's frame compares one by one
// before it keeps them in a map.
const smallObject = 8

// push opens an array or object, reusing the frame a closed one left.
func push(stack []frame, object bool) []frame {
	if len(stack) < cap(stack) {
		stack = stack[:len(stack)+1]
		f := &stack[len(stack)-1]
		f.object, f.wantKey, f.keys, f.set = object, object, f.keys[:0], nil
		return stack
	}
	return append(stack, frame{object: object, wantKey: object})
}

// add records key in the object, or reports false when it was given already.
func (f *frame) add(key []byte) bool {
	if f.set != nil {
		if _, dup := f.set[string(key)]; dup {
			return false
		}
		f.set[string(key)] = struct{}{}
		return true
	}
	for _, k := range f.keys {
		if bytes.Equal(k, key) {
			return false
		}
	}
	if len(f.keys) < smallObject {
		f.keys = append(f.keys, key)
		return true
	}
	f.set = make(map[string]struct{}, 2*smallObject)
	for _, k := range f.keys {
		f.set[string(k)] = struct{}{}
	}
	f.set[string(key)] = struct{}{}
	return true
}

// decodeKey is the string a key's literal (quotes included, checked by
// scanString) decodes to: its bytes when it has no escape.
func decodeKey(lit []byte) []byte {
	inner := lit[1 : len(lit)-1]
	if bytes.IndexByte(inner, '\\') < 0 {
		return inner
	}
	var s string
	if json.Unmarshal(lit, &s) != nil {
		return inner // not valid JSON: what Scan finds is unspecified
	}
	return []byte(s)
}

// scanString checks the string whose contents start at b[i] and returns the
// index just past its closing quote.
func scanString(b []byte, i int) (int, Finding) {
	for i < len(b) && b[i] != '"' {
		if b[i] != '\\' {
			i++
			continue
		}
		if i+1 < len(b) && b[i+1] != 'u' {
			i += 2 // \" \\ \/ \b \f \n \r \t
			continue
		}
		r, ok := hex4(b, i+2)
		if !ok {
			return len(b), Finding{} // not valid JSON
		}
		i += 6
		switch {
		case r == 0:
			return i, Finding{Problem: NULEscape}
		case r >= 0xDC00 && r <= 0xDFFF:
			return i, Finding{Problem: LoneSurrogate, Rune: r}
		case r >= 0xD800 && r <= 0xDBFF:
			if i+1 < len(b) && b[i] == '\\' && b[i+1] == 'u' {
				if lo, ok := hex4(b, i+2); ok && lo >= 0xDC00 && lo <= 0xDFFF {
					i += 6
					continue
				}
			}
			return i, Finding{Problem: LoneSurrogate, Rune: r}
		}
	}
	return i + 1, Finding{}
}

// hex4 is the value of the four hex digits at b[i:], if there are four.
func hex4(b []byte, i int) (rune, bool) {
	if i < 0 || i+4 > len(b) {
		return 0, false
	}
	n, err := strconv.ParseUint(string(b[i:i+4]), 16, 32)
	return rune(n), err == nil
}

func isNumberByte(c byte) bool {
	return c >= '0' && c <= '9' || c == '.' || c == 'e' || c == 'E' || c == '+' || c == '-'
}

// checkNumber finds a number a float64 cannot hold.
func checkNumber(n string) Finding {
	f, err := strconv.ParseFloat(n, 64)
	if err != nil {
		return Finding{Problem: NumberTooLarge, Number: n}
	}
	if f == 0 {
		for _, c := range n {
			if c >= '1' && c <= '9' {
				return Finding{Problem: NumberTooSmall, Number: n}
			}
			if c == 'e' || c == 'E' {
				break
			}
		}
	}
	return Finding{}
}
