package fencedotel

import (
	"encoding/json"

	"go.opentelemetry.io/otel/propagation"
)

// w3cCarrier is the members of a job's metadata the default propagator
// reads, as its TextMapCarrier: no map to make for each attempt.
type w3cCarrier struct {
	traceparent, tracestate, baggage string
}

// Get returns the member named key, "" when there is none.
func (c *w3cCarrier) Get(key string) string {
	switch key {
	case "traceparent":
		return c.traceparent
	case "tracestate":
		return c.tracestate
	case "baggage":
		return c.baggage
	}
	return ""
}

// Set sets the member named key; other keys are dropped (the default
// propagator writes only these three).
func (c *w3cCarrier) Set(key, value string) {
	switch key {
	case "traceparent":
		c.traceparent = value
	case "tracestate":
		c.tracestate = value
	case "baggage":
		c.baggage = value
	}
}

// Keys lists the members that are set.
func (c *w3cCarrier) Keys() []string {
	var keys []string
	for _, kv := range [...]struct{ k, v string }{{"traceparent", c.traceparent}, {"tracestate", c.tracestate}, {"baggage", c.baggage}} {
		if kv.v != "" {
			keys = append(keys, kv.k)
		}
	}
	return keys
}

// carrier is the members of a job's metadata the propagator reads; nil
// when it has none. With the default propagator only its three members
// are read, by a scan of the object's top level (w3cMembers) that makes
// nothing but their strings; another propagator gets every string member.
func (m *Middleware) carrier(meta json.RawMessage) propagation.TextMapCarrier {
	if len(meta) == 0 {
		return nil
	}
	if m.w3c {
		c, ok := w3cMembers(meta)
		if !ok { // escapes in a key or in one of the values: decode it
			var f struct {
				Traceparent string `json:"traceparent"`
				Tracestate  string `json:"tracestate"`
				Baggage     string `json:"baggage"`
			}
			if json.Unmarshal(meta, &f) != nil {
				return nil
			}
			c = &w3cCarrier{f.Traceparent, f.Tracestate, f.Baggage}
		}
		if c == nil || c.traceparent == "" {
			return nil
		}
		return c
	}
	var all map[string]any
	if json.Unmarshal(meta, &all) != nil {
		return nil
	}
	c := propagation.MapCarrier{}
	for k, v := range all {
		if s, ok := v.(string); ok {
			c[k] = s
		}
	}
	return c
}

// w3cMembers reads the string members traceparent, tracestate and baggage
// of the JSON object b's top level, skipping every other member, and says
// ok; nil with ok when b has none of them. It says not ok, for the caller
// to decode b with encoding/json, when it cannot read b so: a key or one
// of those values with an escape in it, or text that is not an object.
func w3cMembers(b []byte) (*w3cCarrier, bool) {
	var c w3cCarrier
	found := false
	i := skipSpace(b, 0)
	if i >= len(b) || b[i] != '{' {
		return nil, false
	}
	i = skipSpace(b, i+1)
	if i < len(b) && b[i] == '}' {
		return nil, true
	}
	for i < len(b) {
		key, next, escaped := scanString(b, i)
		if next < 0 || escaped {
			return nil, false
		}
		i = skipSpace(b, next)
		if i >= len(b) || b[i] != ':' {
			return nil, false
		}
		i = skipSpace(b, i+1)
		if i >= len(b) {
			return nil, false
		}
		var dst *string
		switch string(key) {
		case "traceparent":
			dst = &c.traceparent
		case "tracestate":
			dst = &c.tracestate
		case "baggage":
			dst = &c.baggage
		}
		if dst != nil && b[i] == '"' {
			v, next, escaped := scanString(b, i)
			if next < 0 || escaped {
				return nil, false
			}
			*dst, found, i = string(v), true, next
		} else if i = skipValue(b, i); i < 0 {
			return nil, false
		}
		i = skipSpace(b, i)
		if i >= len(b) {
			return nil, false
		}
		switch b[i] {
		case '}':
			if !found {
				return nil, true
			}
			return &c, true
		case ',':
			i = skipSpace(b, i+1)
		default:
			return nil, false
		}
	}
	return nil, false
}

func skipSpace(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r') {
		i++
	}
	return i
}

// scanString reads the string that starts at b[i] ('"'): its text between
// the quotes, the index after its closing quote (-1 when it does not
// close, or b[i] is not '"') and whether it holds an escape.
func scanString(b []byte, i int) (text []byte, next int, escaped bool) {
	if i >= len(b) || b[i] != '"' {
		return nil, -1, false
	}
	for j := i + 1; j < len(b); j++ {
		switch b[j] {
		case '\\':
			escaped = true
			j++
		case '"':
			return b[i+1 : j], j + 1, escaped
		}
	}
	return nil, -1, false
}

// skipValue returns the index after the JSON value that starts at b[i],
// -1 when it does not end. b is taken to be valid JSON (a job's metadata
// is checked when it is enqueued): a value other than a string, an object
// or an array ends at the next ',', '}' or ']' or space.
func skipValue(b []byte, i int) int {
	depth := 0
	for i < len(b) {
		switch b[i] {
		case '"':
			_, next, _ := scanString(b, i)
			if next < 0 {
				return -1
			}
			i = next
			if depth == 0 {
				return i
			}
			continue
		case '{', '[':
			depth++
		case '}', ']':
			if depth == 0 {
				return i
			}
			depth--
			if depth == 0 {
				return i + 1
			}
		case ',', ' ', '\t', '\n', '\r':
			if depth == 0 {
				return i
			}
		}
		i++
	}
	if depth == 0 {
		return i
	}
	return -1
}
