package fenced_test

import (
	"encoding/json"
	"errors"
	"testing"

	"github.com/fenced/fenced"
)

// SetMetadata adds a key to whatever metadata the caller gave (raw JSON, a
// map, a struct), keeps the other keys, and refuses metadata that is not an
// object; Validate holds metadata to its rules.
func TestSetMetadataKeepsTheCallersKeys(t *testing.T) {
	t.Parallel()
	for name, given := range map[string]any{
		"none":   nil,
		"raw":    json.RawMessage(`{"tenant":"42"}`),
		"map":    map[string]string{"tenant": "42"},
		"struct": struct{ Tenant string }{"42"},
	} {
		p := fenced.EnqueueParams{Kind: "k", Metadata: given}
		if err := p.SetMetadata("traceparent", "00-x-y-01"); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		var m map[string]string
		if err := json.Unmarshal(p.Metadata.(json.RawMessage), &m); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if m["traceparent"] != "00-x-y-01" || given != nil && m["tenant"] != "42" && m["Tenant"] != "42" {
			t.Fatalf("%s: metadata %v", name, m)
		}
		if err := p.Validate(); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
	}
	p := fenced.EnqueueParams{Kind: "k", Metadata: json.RawMessage(`[1]`)}
	if err := p.SetMetadata("a", 1); !errors.Is(err, fenced.ErrInvalid) {
		t.Fatalf("SetMetadata on an array: %v", err)
	}
	if string(p.Metadata.(json.RawMessage)) != `[1]` {
		t.Fatalf("a refused SetMetadata changed the metadata to %v", p.Metadata)
	}
	for _, bad := range []any{json.RawMessage(`[1]`), 7, json.RawMessage(`{"a":1,"a":2}`), json.RawMessage(` "s"`)} {
		if err := (fenced.EnqueueParams{Kind: "k", Metadata: bad}).Validate(); !errors.Is(err, fenced.ErrInvalid) {
			t.Errorf("metadata %v: %v, want invalid", bad, err)
		}
	}
	var nilMap map[string]string
	if err := (fenced.EnqueueParams{Kind: "k", Metadata: nilMap}).Validate(); err != nil {
		t.Fatalf("a nil map (none): %v", err)
	}
}
