package server

import (
	"bytes"
	"encoding/json"
	"net/http"
	"regexp"
	"sort"
	"strings"
	"testing"

	"github.com/fenced/fenced/internal/test/testdb"
)

// TestOpenAPIDocumentMatchesTheRoutes: the document is OpenAPI 3.1.0, and
// its operations are exactly the routes the server registers (apiRoutes),
// each with its path parameters declared and every reply given a JSON
// schema that compiles.
func TestOpenAPIDocumentMatchesTheRoutes(t *testing.T) {
	t.Parallel()
	d := loadAPIDoc(t)
	if d.doc["openapi"] != "3.1.0" {
		t.Fatalf("openapi is %v, want 3.1.0", d.doc["openapi"])
	}

	registered := map[string]bool{}
	for _, rt := range apiRoutes {
		registered[rt.pattern] = true
	}
	documented := d.operations()
	var undocumented, unregistered []string
	for p := range registered {
		if !documented[p] {
			undocumented = append(undocumented, p)
		}
	}
	for p := range documented {
		if !registered[p] {
			unregistered = append(unregistered, p)
		}
	}
	sort.Strings(undocumented)
	sort.Strings(unregistered)
	if len(undocumented) > 0 {
		t.Errorf("routes the server registers that openapi.json does not document:\n\t%s", strings.Join(undocumented, "\n\t"))
	}
	if len(unregistered) > 0 {
		t.Errorf("operations openapi.json documents that the server does not register:\n\t%s", strings.Join(unregistered, "\n\t"))
	}
	if documented["GET /metrics"] {
		t.Error("openapi.json documents /metrics, which is Prometheus text, not JSON")
	}

	wildcard := regexp.MustCompile(`\{([^}]+)\}`)
	for op := range documented {
		method, path, _ := strings.Cut(op, " ")
		o, _ := d.operation(method, path)
		declared := map[string]bool{}
		params, _ := o["parameters"].([]any)
		for _, p := range params {
			ref, _ := p.(map[string]any)["$ref"].(string)
			v, ok := d.at(strings.TrimPrefix(ref, "#"))
			if !ok {
				t.Errorf("%s: parameter %v does not resolve", op, p)
				continue
			}
			if pm := v.(map[string]any); pm["in"] == "path" {
				declared[pm["name"].(string)] = true
			}
		}
		var want []string
		for _, m := range wildcard.FindAllStringSubmatch(path, -1) {
			want = append(want, m[1])
			if !declared[m[1]] {
				t.Errorf("%s: path parameter %s is not declared", op, m[1])
			}
		}
		if len(declared) != len(want) {
			t.Errorf("%s: declares path parameters %v, the path has %v", op, declared, want)
		}
		responses, _ := o["responses"].(map[string]any)
		if len(responses) == 0 {
			t.Errorf("%s: no responses", op)
		}
		for code := range responses {
			if code == "default" {
				t.Errorf("%s: a default response would make any status pass", op)
				continue
			}
			var status int
			if err := json.Unmarshal([]byte(code), &status); err != nil {
				t.Errorf("%s: response %q is not a status code", op, code)
				continue
			}
			ptr, err := d.replySchemaPointer(method, path, status)
			if err != nil {
				t.Error(err)
				continue
			}
			if _, err := d.schema(ptr); err != nil {
				t.Errorf("%s %d: schema: %v", op, status, err)
			}
		}
	}
}

// TestOpenAPIValidationCanFail: bodies that are wrong in one way each are
// refused, and a status the document does not give is an error, so the
// session's checks are not vacuous.
func TestOpenAPIValidationCanFail(t *testing.T) {
	t.Parallel()
	d := loadAPIDoc(t)
	good := `{"name":"a","owner":"w","fence":1,"expires_at":"2026-11-29T12:04:05.608000Z","held":true,"released":false,"advanced":false,"db_time":"2026-11-29T12:04:04.608000Z"}`
	if err := d.validate("GET", "/v1/leases/{name}", 200, []byte(good)); err != nil {
		t.Fatalf("a good lease is refused: %v", err)
	}
	for what, body := range map[string]string{
		"a fence that is a string":          strings.Replace(good, `"fence":1`, `"fence":"1"`, 1),
		"a fence that is not an integer":    strings.Replace(good, `"fence":1`, `"fence":1.5`, 1),
		"a member left out":                 strings.Replace(good, `"held":true,`, ``, 1),
		"a member not documented":           strings.Replace(good, `"held":true,`, `"held":true,"extra":1,`, 1),
		"a time without microseconds":       strings.Replace(good, `05.608000Z`, `05Z`, 1),
		"a time that is not a date-time":    strings.Replace(good, `2026-11-29T12:04:05.608000Z`, `2026-13-29T12:04:05.608000Z`, 1),
		"an array where an object is":       `[]`,
		"an error reply where a lease goes": `{"error":"not_found","message":"x"}`,
	} {
		if err := d.validate("GET", "/v1/leases/{name}", 200, []byte(body)); err == nil {
			t.Errorf("a lease with %s passes: %s", what, body)
		}
	}
	for what, c := range map[string]struct {
		status int
		body   string
	}{
		"an unknown error code":          {409, `{"error":"locked","message":"x","kind":"lease","name":"a","your_fence":1,"current_fence":2,"current_owner":"","reason":"superseded"}`},
		"a stale reason not in the enum": {409, `{"error":"stale_fence","message":"x","kind":"lease","name":"a","your_fence":1,"current_fence":2,"current_owner":"","reason":"late"}`},
		"a 409 without its details":      {409, `{"error":"stale_fence","message":"x"}`},
		"a 400 without field":            {400, `{"error":"invalid","message":"x"}`},
	} {
		if err := d.validate("POST", "/v1/leases/{name}/renew", c.status, []byte(c.body)); err == nil {
			t.Errorf("a renew reply with %s passes: %s", what, c.body)
		}
	}
	if err := d.validate("GET", "/v1/leases/{name}", http.StatusTeapot, []byte(`{}`)); err == nil {
		t.Error("a status the document does not give passes")
	}
	if err := d.validate("PATCH", "/v1/leases/{name}", 200, []byte(`{}`)); err == nil {
		t.Error("an operation the document does not have passes")
	}
}

// TestOpenAPIServed: GET /v1/openapi.json serves the embedded document as
// JSON without a token, as /healthz is served; the API itself still wants
// one.
func TestOpenAPIServed(t *testing.T) {
	t.Parallel()
	e := setup(t, testdb.SQLite(t), Config{Tokens: []string{"openapi-test-token-0123456789"}})
	e.token = ""
	r, err := e.send("GET", "/v1/openapi.json", nil)
	if err != nil || r.status != http.StatusOK || r.header.Get("Content-Type") != "application/json" {
		t.Fatalf("GET /v1/openapi.json without a token = %v %d %v", err, r.status, r.header)
	}
	var served, embedded bytes.Buffer
	if err := json.Compact(&served, r.raw); err != nil {
		t.Fatal(err)
	}
	if err := json.Compact(&embedded, openAPIDocument); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(served.Bytes(), embedded.Bytes()) {
		t.Fatal("the served document is not the embedded one")
	}
	if r.header.Get(HeaderDBTime) != "" {
		t.Errorf("the document carries a database time: %s", r.header.Get(HeaderDBTime))
	}
	if r, _ := e.send("GET", "/v1/leases", nil); r.status != http.StatusUnauthorized {
		t.Fatalf("GET /v1/leases without a token = %d %s", r.status, r.raw)
	}
	if r, _ := e.send("GET", "/v1/openapi.json?x=1", nil); r.status != http.StatusBadRequest {
		t.Fatalf("GET /v1/openapi.json with a query = %d %s", r.status, r.raw)
	}
}
