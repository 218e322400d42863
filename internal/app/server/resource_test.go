package server

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/fenced/fenced"
)

func TestResources(t *testing.T) {
	t.Parallel()
	eachDB(t, func(t *testing.T, db newDB) {
		t.Run("WriteReadAndVersions", func(t *testing.T) {
			t.Parallel()
			e := setup(t, db(t), Config{})
			w := e.ok("PUT", "/v1/resources/invoice-42", map[string]any{"value": "paid ✓", "fence": 3})
			if w.body["key"] != "invoice-42" || num(w, "fence") != 3 || num(w, "version") != 1 || w.body["replayed"] != false {
				t.Fatalf("write = %s", w.raw)
			}
			e.ok("PUT", "/v1/resources/invoice-42", map[string]any{"value": "", "fence": 3}) // same fence, empty value
			r := e.ok("GET", "/v1/resources/invoice-42", nil)
			if r.body["value"] != "" || num(r, "fence") != 3 || num(r, "version") != 2 || r.body["updated_at"] == nil {
				t.Fatalf("read = %s", r.raw)
			}
			if _, ok := r.body["value_base64"]; ok {
				t.Fatalf("text value sent as base64: %s", r.raw)
			}
		})
		t.Run("LargestValueFitsTheDefaultBodyHoweverEscaped", func(t *testing.T) {
			t.Parallel()
			e := setup(t, db(t), Config{})
			// Control characters are the worst case: \u0001, 6 bytes each.
			value := strings.Repeat("\x01", fenced.MaxValueBytes)
			body, err := json.Marshal(map[string]any{"value": value, "fence": 1, "operation_id": strings.Repeat(`"`, fenced.MaxNameBytes)})
			if err != nil {
				t.Fatal(err)
			}
			if len(body) < 6*fenced.MaxValueBytes {
				t.Fatalf("body of %d bytes is not the worst case", len(body))
			}
			e.ok("PUT", "/v1/resources/big", body)
			r := e.ok("GET", "/v1/resources/big", nil)
			if r.body["value"] != value {
				t.Fatalf("read back %d bytes, want the %d written", len(r.body["value"].(string)), len(value))
			}
			// One byte more is refused as a too large value, not as a too
			// large body.
			over, _ := json.Marshal(map[string]any{"value": value + "\x01", "fence": 1})
			if r := e.fails(http.StatusBadRequest, codeInvalid, "PUT", "/v1/resources/big", over); r.body["field"] != "value" {
				t.Fatalf("a value over the limit = %s", r.raw)
			}
		})
		t.Run("StaleWriteIs409WithTheStoredFenceAndChangesNothing", func(t *testing.T) {
			t.Parallel()
			e := setup(t, db(t), Config{})
			e.ok("POST", "/v1/leases/report/acquire", map[string]any{"owner": "A", "ttl_ms": 50})
			e.ok("PUT", "/v1/resources/report", map[string]any{"value": "A's", "fence": 1})
			e.waitExpired("report")
			e.ok("POST", "/v1/leases/report/acquire", map[string]any{"owner": "B"})
			e.ok("PUT", "/v1/resources/report", map[string]any{"value": "B's", "fence": 2})
			s := e.fails(http.StatusConflict, codeStaleFence, "PUT", "/v1/resources/report", map[string]any{"value": "A's late", "fence": 1})
			if s.body["kind"] != "resource" || s.body["name"] != "report" || num(s, "your_fence") != 1 || num(s, "current_fence") != 2 {
				t.Fatalf("stale write = %s", s.raw)
			}
			r := e.ok("GET", "/v1/resources/report", nil)
			if r.body["value"] != "B's" || num(r, "fence") != 2 || num(r, "version") != 2 {
				t.Fatalf("after the stale write = %s, want B's write unchanged", r.raw)
			}
		})
		t.Run("OperationIDReplaysTheFirstOutcome", func(t *testing.T) {
			t.Parallel()
			e := setup(t, db(t), Config{})
			first := e.ok("PUT", "/v1/resources/k", map[string]any{"value": "v1", "fence": 1, "operation_id": "op-1"})
			again := e.ok("PUT", "/v1/resources/k", map[string]any{"value": "v1", "fence": 1, "operation_id": "op-1"})
			if again.body["replayed"] != true || num(again, "version") != num(first, "version") {
				t.Fatalf("repeat = %s, first %s", again.raw, first.raw)
			}
			r := e.fails(http.StatusBadRequest, codeInvalid, "PUT", "/v1/resources/k",
				map[string]any{"value": "v2", "fence": 1, "operation_id": "op-1"})
			if r.body["field"] != "operation_id" {
				t.Fatalf("the same operation id for another value = %s, want invalid operation id", r.raw)
			}
		})
		t.Run("NonTextValuesAreRefused", func(t *testing.T) {
			t.Parallel()
			e := setup(t, db(t), Config{})
			for name, body := range map[string]string{
				"invalid UTF-8":     "{\"value\": \"\xff\xfe\", \"fence\": 1}",
				"lone surrogate":    `{"value": "\ud800", "fence": 1}`,
				"lone low":          `{"value": "a\udc00", "fence": 1}`,
				"surrogate at end":  `{"value": "\ud83d", "fence": 1}`,
				"NUL":               `{"value": "a\u0000b", "fence": 1}`,
				"high then not low": `{"value": "\ud83d\u0041", "fence": 1}`,
			} {
				r := e.fails(http.StatusBadRequest, codeInvalid, "PUT", "/v1/resources/k", body)
				if r.body["field"] != "body" {
					t.Errorf("%s: %s", name, r.raw)
				}
			}
			e.fails(http.StatusNotFound, codeNotFound, "GET", "/v1/resources/k", nil)
			e.ok("PUT", "/v1/resources/k", `{"value": "\ud83d\ude00 \\ud800", "fence": 1}`) // a pair, and an escaped backslash
			if r := e.ok("GET", "/v1/resources/k", nil); r.body["value"] != "😀 \\ud800" {
				t.Fatalf("value = %q", r.body["value"])
			}
		})
		t.Run("BinaryValueFromTheLibraryIsSentAsBase64", func(t *testing.T) {
			t.Parallel()
			e := setup(t, db(t), Config{})
			bin := []byte{0xff, 0x00, 'a'}
			if _, err := e.c.WriteResource(context.Background(), "bin", bin, 1, fenced.WriteOptions{}); err != nil {
				t.Fatal(err)
			}
			r := e.ok("GET", "/v1/resources/bin", nil)
			got, _ := base64.StdEncoding.DecodeString(r.body["value_base64"].(string))
			if r.body["value"] != "" || string(got) != string(bin) {
				t.Fatalf("binary read = %s", r.raw)
			}
		})
		t.Run("RequiredFields", func(t *testing.T) {
			t.Parallel()
			e := setup(t, db(t), Config{})
			for body, field := range map[string]string{
				`{"fence": 1}`:                                  "value",
				`{"value": "v"}`:                                "fence",
				`{"value": "v", "fence": -2}`:                   "fence",
				`{"value": 5, "fence": 1}`:                      "value",
				`{"value": "v", "fence": 1, "operation_id": 7}`: "operation_id",
			} {
				if r := e.fails(http.StatusBadRequest, codeInvalid, "PUT", "/v1/resources/k", body); r.body["field"] != field {
					t.Errorf("%s: field %v, want %s", body, r.body["field"], field)
				}
			}
		})
	})
}
