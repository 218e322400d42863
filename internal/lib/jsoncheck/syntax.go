package jsoncheck

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"unicode/utf8"
)

// SyntaxError says why and where b is not valid JSON text: the decoder's
// reason, then the line and column of the byte it stopped at (both from 1;
// the column counts characters, a tab as one), or of the place just past
// the text when the text ends early. It is "" when b is valid JSON
// (json.Valid).
func SyntaxError(b []byte) string {
	if json.Valid(b) {
		return ""
	}
	// Unmarshal checks the whole text before it decodes, so into a
	// RawMessage it decodes nothing; Compact's errors carry no offset.
	var raw json.RawMessage
	err := json.Unmarshal(b, &raw)
	var se *json.SyntaxError
	if !errors.As(err, &se) {
		return "is not valid JSON" // not expected: Valid and Unmarshal scan alike
	}
	at := int(se.Offset) - 1 // the offending byte: Offset counts it as read
	if at < 0 || at >= len(b) || se.Error() == "unexpected end of JSON input" {
		at = len(b)
	}
	line, col := Position(b, at)
	return fmt.Sprintf("%s at line %d, column %d", se.Error(), line, col)
}

// Position is the line and column, both from 1, of b[at] (or of the place
// just past b when at is len(b)); the column counts characters.
func Position(b []byte, at int) (line, col int) {
	before := b[:at]
	line = bytes.Count(before, []byte{'\n'}) + 1
	start := bytes.LastIndexByte(before, '\n') + 1
	return line, utf8.RuneCount(before[start:]) + 1
}
