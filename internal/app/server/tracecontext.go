package server

import (
	"bytes"
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
)

// withTraceHeaders returns the metadata of an enqueue with the request's
// W3C Trace Context headers in it: the traceparent header (and the
// tracestate header, when there is one) become the metadata's
// "traceparent" (and "tracestate") members, as fencedotel writes them, so
// the job carries its producer's trace to whichever worker claims it, in
// any language, whether or not this server traces. The body wins: metadata
// that already has a traceparent member is returned as it is (a
// tracestate member of its own stays, the header's is not added), and so
// is metadata that is not a JSON object (the enqueue refuses it). A
// traceparent that is not valid by the W3C rules is ignored, as the rules
// say, and so is a tracestate that is not a list of at most 32 key=value
// members of printable ASCII in at most maxTracestate bytes.
func withTraceHeaders(h http.Header, metadata json.RawMessage) json.RawMessage {
	parents := h.Values("traceparent")
	if len(parents) != 1 {
		return metadata // none, or two: ignored, as W3C says
	}
	parent := strings.Trim(parents[0], " \t")
	if !validTraceparent(parent) {
		return metadata
	}
	var m map[string]json.RawMessage
	body := bytes.TrimSpace(metadata)
	if len(body) > 0 && string(body) != "null" {
		if json.Unmarshal(body, &m) != nil || m == nil {
			return metadata
		}
		if _, ok := m["traceparent"]; ok {
			return metadata
		}
	}
	// The members are put before the body's, whose text stays as it was
	// sent, so the enqueue checks it (a key given twice) as without them.
	b := []byte(`{"traceparent":`)
	b = strconv.AppendQuote(b, parent)
	if _, ok := m["tracestate"]; !ok {
		if state, ok := tracestate(h.Values("tracestate")); ok {
			b = append(b, `,"tracestate":`...)
			b = strconv.AppendQuote(b, state)
		}
	}
	if len(m) == 0 {
		return append(b, '}')
	}
	return append(append(b, ','), body[1:]...)
}

// validTraceparent says whether s is a traceparent header by W3C Trace
// Context: version-traceid-parentid-flags in lowercase hex, version not
// ff, neither id all zeros; version 00 exactly so, a later version
// possibly followed by "-" and more (lowercase hex and dashes).
func validTraceparent(s string) bool {
	if len(s) < 55 || (len(s) > 55 && (s[:2] == "00" || s[55] != '-')) {
		return false
	}
	for i := range len(s) {
		if c := s[i]; c != '-' && (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	if s[2] != '-' || s[35] != '-' || s[52] != '-' || s[:2] == "ff" {
		return false
	}
	hex := func(f string) bool {
		zero := true
		for i := range len(f) {
			c := f[i]
			if (c < '0' || c > '9') && (c < 'a' || c > 'f') {
				return false
			}
			zero = zero && c == '0'
		}
		return !zero || len(f) == 2
	}
	return hex(s[:2]) && hex(s[3:35]) && hex(s[36:52]) && hex(s[53:55])
}

// maxTracestate bounds the tracestate carried from the header.
const maxTracestate = 512

// tracestate is the tracestate headers joined as one list, and whether it
// is one to carry: non-empty, at most maxTracestate bytes of printable
// ASCII, at most 32 members, each key=value.
func tracestate(values []string) (string, bool) {
	var members []string
	for _, v := range values {
		for m := range strings.SplitSeq(v, ",") {
			if m = strings.Trim(m, " \t"); m != "" {
				members = append(members, m)
			}
		}
	}
	s := strings.Join(members, ",")
	if len(members) == 0 || len(members) > 32 || len(s) > maxTracestate {
		return "", false
	}
	for _, m := range members {
		k, v, ok := strings.Cut(m, "=")
		if !ok || k == "" || v == "" {
			return "", false
		}
	}
	for i := range len(s) {
		if s[i] < 0x20 || s[i] > 0x7e {
			return "", false
		}
	}
	return s, true
}
