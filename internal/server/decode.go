package server

import (
	"bytes"
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"mime"
	"net/http"
	"reflect"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/fenced/fenced/internal/jsoncheck"
)

// decodeBody reads r's JSON body into dst. A body is required unless
// optional; an empty optional body leaves dst as it is. It refuses with 415
// a body that is not declared application/json (a browser cannot send that
// cross-origin without asking first), with 413 a body over the limit, and
// with 400 anything decodeJSON refuses.
func decodeBody(r *http.Request, dst any, optional bool) error {
	if r.ContentLength != 0 {
		mt, _, err := mime.ParseMediaType(r.Header.Get("Content-Type"))
		if err != nil || mt != "application/json" {
			return newError(http.StatusUnsupportedMediaType, codeUnsupportedType,
				"the body must be JSON, sent with Content-Type: application/json")
		}
	}
	body, err := io.ReadAll(r.Body)
	var tooBig *http.MaxBytesError
	switch {
	case errors.As(err, &tooBig):
		return newError(http.StatusRequestEntityTooLarge, codeTooLarge,
			fmt.Sprintf("the body is over the limit of %d bytes", tooBig.Limit))
	case err != nil:
		return invalid("body", "reading the body: "+err.Error())
	}
	if optional && len(bytes.TrimSpace(body)) == 0 {
		return nil
	}
	return decodeJSON(body, dst)
}

// decodeJSON decodes exactly one JSON object into dst, strictly: valid
// UTF-8; no unknown fields; nothing after the object; numbers that fit the
// field; no NUL and no unpaired surrogate in any string (the decoder would
// quietly turn a bad surrogate into U+FFFD, and no backend stores NUL).
// Every refusal is an *apiError 400 naming the field.
func decodeJSON(body []byte, dst any) error {
	if !utf8.Valid(body) {
		return invalid("body", "the body is not valid UTF-8")
	}
	trimmed := bytes.TrimLeft(body, " \t\r\n")
	if len(trimmed) == 0 || trimmed[0] != '{' {
		return invalid("body", "the body must be a JSON object")
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(dst); err != nil {
		return decodeError(err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return invalid("body", "unexpected data after the JSON object")
	}
	if err := checkStrings(body); err != nil {
		return err
	}
	return checkKeys(body, dst)
}

// checkKeys refuses what the decoder lets through about object keys (body
// is valid JSON that decoded into dst): a key given twice in one object, at
// any depth (the decoder keeps the last silently), and a top-level key that
// is not exactly the name of one of dst's fields (the decoder matches
// "OWNER" or "Fence" to "owner" or "fence"). Errors name the top-level
// field.
func checkKeys(body []byte, dst any) error {
	names := fieldNames(dst)
	type frame struct {
		keys    map[string]bool // nil for an array
		wantKey bool
	}
	var stack []*frame
	top := "body" // the top-level key being read
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return invalid("body", "malformed JSON: "+err.Error())
		}
		if n := len(stack); n > 0 && stack[n-1].keys != nil && stack[n-1].wantKey {
			f := stack[n-1]
			if tok == json.Delim('}') {
				stack = stack[:n-1]
				continue
			}
			key, _ := tok.(string)
			if n == 1 {
				top = cmp.Or(key, "body")
				if names != nil && !names[key] {
					return invalid(top, "unknown field "+strconv.Quote(key))
				}
			}
			if f.keys[key] {
				return invalid(top, "key "+strconv.Quote(key)+" is given more than once")
			}
			f.keys[key] = true
			f.wantKey = false
			continue
		}
		if n := len(stack); n > 0 && stack[n-1].keys != nil {
			stack[n-1].wantKey = true // a value was read: a key or '}' comes next
		}
		switch tok {
		case json.Delim('{'):
			stack = append(stack, &frame{keys: map[string]bool{}, wantKey: true})
		case json.Delim('['):
			stack = append(stack, &frame{})
		case json.Delim(']'):
			stack = stack[:len(stack)-1]
		}
	}
}

// fieldNames is the set of JSON names of the fields of the struct dst
// points to, or nil when dst is not a pointer to a struct.
func fieldNames(dst any) map[string]bool {
	t := reflect.TypeOf(dst)
	if t == nil || t.Kind() != reflect.Pointer || t.Elem().Kind() != reflect.Struct {
		return nil
	}
	t = t.Elem()
	names := map[string]bool{}
	for i := range t.NumField() {
		f := t.Field(i)
		if !f.IsExported() {
			continue
		}
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		switch name {
		case "-":
			continue
		case "":
			name = f.Name
		}
		names[name] = true
	}
	return names
}

// decodeError names what was wrong with a body the decoder refused.
func decodeError(err error) error {
	var (
		syn *json.SyntaxError
		typ *json.UnmarshalTypeError
	)
	switch {
	case errors.As(err, &syn):
		return invalid("body", fmt.Sprintf("malformed JSON at byte %d: %s", syn.Offset, syn.Error()))
	case errors.As(err, &typ):
		field := typ.Field
		if field == "" {
			field = "body"
		}
		return invalid(field, fmt.Sprintf("got %s, want %s", typ.Value, typeName(typ.Type.String())))
	case errors.Is(err, io.ErrUnexpectedEOF):
		return invalid("body", "the JSON object is cut short")
	}
	if name, ok := strings.CutPrefix(err.Error(), "json: unknown field "); ok {
		field, _ := strconv.Unquote(name)
		if field == "" {
			field = "body"
		}
		return invalid(field, "unknown field "+name)
	}
	return invalid("body", err.Error())
}

// typeName says a Go type as a JSON user reads it.
func typeName(t string) string {
	switch {
	case strings.Contains(t, "int"):
		return "an integer from " + strconv.FormatInt(math.MinInt64, 10) + " to " + strconv.FormatInt(math.MaxInt64, 10)
	case strings.Contains(t, "string"):
		return "a string"
	case strings.Contains(t, "bool"):
		return "true or false"
	case strings.Contains(t, "map"), strings.Contains(t, "struct"):
		return "an object"
	}
	return t
}

// checkStrings refuses \u0000 and unpaired UTF-16 surrogate escapes in the
// string literals of body, which is valid JSON: jsoncheck's scan, the one
// the library applies to args and output.
func checkStrings(body []byte) error {
	f := jsoncheck.Scan(body, jsoncheck.Options{})
	switch f.Problem {
	case jsoncheck.NULEscape:
		return invalid("body", `strings must not contain \u0000`)
	case jsoncheck.LoneSurrogate:
		return invalid("body", fmt.Sprintf(`unpaired surrogate \u%04x in a string`, f.Rune))
	}
	return nil
}

// millis turns a count of milliseconds into a duration within [min, max],
// or refuses it naming field. nil gives def.
func millis(field string, ms *int64, def, min, max time.Duration) (time.Duration, error) {
	if ms == nil {
		return def, nil
	}
	if *ms < min.Milliseconds() || *ms > max.Milliseconds() {
		return 0, invalid(field, fmt.Sprintf("%d is outside %d to %d", *ms, min.Milliseconds(), max.Milliseconds()))
	}
	return time.Duration(*ms) * time.Millisecond, nil
}

// required refuses a missing field.
func required[T any](field string, v *T) (T, error) {
	if v == nil {
		var zero T
		return zero, invalid(field, "is required")
	}
	return *v, nil
}
