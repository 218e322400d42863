package server

import (
	"html"
	"net/http"
	"strings"
	"testing"

	"github.com/fenced/fenced/internal/test/testdb"
)

// GET /v1/openapi.html serves, without a token, a page of every operation
// and every schema the document holds, with nothing loaded from elsewhere.
func TestOpenAPIPageShowsTheWholeDocument(t *testing.T) {
	t.Parallel()
	e := setup(t, testdb.SQLite(t), Config{Tokens: []string{"openapi-test-token-0123456789"}})
	e.token = ""
	r, err := e.send("GET", "/v1/openapi.html", nil)
	if err != nil || r.status != http.StatusOK || r.header.Get("Content-Type") != "text/html; charset=utf-8" {
		t.Fatalf("GET /v1/openapi.html without a token = %v %d %v", err, r.status, r.header)
	}
	if csp := r.header.Get("Content-Security-Policy"); !strings.HasPrefix(csp, "default-src 'none';") {
		t.Errorf("Content-Security-Policy %q", csp)
	}
	page := string(r.raw)
	for _, bad := range []string{"<script", "<link", "src=", "@import", "http://", "https://"} {
		if strings.Contains(page, bad) {
			t.Errorf("the page holds %q: it must load nothing from elsewhere", bad)
		}
	}
	d := loadAPIDoc(t)
	for op := range d.operations() {
		method, path, _ := strings.Cut(op, " ")
		o, err := d.operation(method, path)
		if err != nil {
			t.Fatal(err)
		}
		id, _ := o["operationId"].(string)
		want := `<section id="op-` + id + `">` + "\n" + `<h3><span class="method ` + strings.ToLower(method) + `">` + method +
			`</span> <code>` + html.EscapeString(path) + `</code> — ` + html.EscapeString(o["summary"].(string)) + `</h3>`
		if !strings.Contains(page, want) {
			t.Errorf("the page has no section for %s %s (%s)", method, path, id)
		}
	}
	schemas := d.doc["components"].(map[string]any)["schemas"].(map[string]any)
	for name := range schemas {
		if !strings.Contains(page, `<section id="schema-`+name+`">`) {
			t.Errorf("the page has no section for schema %s", name)
		}
	}
	// Spot checks of what a section says: a path parameter, a request
	// body's schema linked to its section, a property's limits.
	for _, want := range []string{
		`<td><code>queue</code> <span class="req">required</span></td><td>path</td><td>string</td>`,
		`<h4>Request body</h4><p><a href="#schema-ClaimRequest"><code>ClaimRequest</code></a> <span class="req">required</span></p>`,
		`<td><code>priority</code> <span class="req">required</span></td><td>integer (int32)</td><td>≥ 0, ≤ 10000</td>`,
	} {
		if !strings.Contains(page, want) {
			t.Errorf("the page does not say %s", want)
		}
	}
	if r, _ := e.send("GET", "/v1/openapi.html?x=1", nil); r.status != http.StatusBadRequest {
		t.Fatalf("GET /v1/openapi.html with a query = %d %s", r.status, r.raw)
	}
}
