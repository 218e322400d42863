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

	"github.com/fenced/fenced/internal/lib/jsoncheck"
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
// UTF-8; no unknown fields, and each top-level key exactly a field's name;
// nothing after the object; numbers that fit the field; and nothing
// jsoncheck finds (checkScan). Every refusal is an *apiError 400 naming the
// field.
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
	if err := checkScan(body); err != nil {
		return err
	}
	return checkFieldNames(body, dst)
}

// checkFieldNames refuses a top-level key of body (a valid JSON object
// that decoded into dst) that is not exactly the name of one of dst's
// fields: the decoder matches "OWNER" or "Fence" to "owner" or "fence".
func checkFieldNames(body []byte, dst any) error {
	names := fieldNames(dst)
	if names == nil {
		return nil
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	if _, err := dec.Token(); err != nil { // the object's '{'
		return invalid("body", "malformed JSON: "+err.Error())
	}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return invalid("body", "malformed JSON: "+err.Error())
		}
		key, _ := tok.(string)
		if !names[key] {
			return invalid(cmp.Or(key, "body"), "unknown field "+strconv.Quote(key))
		}
		var value json.RawMessage
		if err := dec.Decode(&value); err != nil {
			return invalid(cmp.Or(key, "body"), "malformed JSON: "+err.Error())
		}
	}
	return nil
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

// checkScan refuses what jsoncheck finds in body, which is valid JSON
// (the scan the library applies to args, output and progress): \u0000 and
// unpaired UTF-16 surrogate escapes in strings, and a key given twice in
// one object at any depth (the decoder would keep the last silently, and
// the backends do not store it alike), named by the top-level field it is
// in.
func checkScan(body []byte) error {
	f := jsoncheck.Scan(body, jsoncheck.Options{})
	switch f.Problem {
	case jsoncheck.NULEscape:
		return invalid("body", `strings must not contain \u0000`)
	case jsoncheck.LoneSurrogate:
		return invalid("body", fmt.Sprintf(`unpaired surrogate \u%04x in a string`, f.Rune))
	case jsoncheck.DuplicateKey:
		return invalid(cmp.Or(f.Member, "body"), "key "+strconv.Quote(f.Key)+" is given more than once")
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
