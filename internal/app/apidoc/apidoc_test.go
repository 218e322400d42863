package apidoc

import (
	"strings"
	"testing"
)

const small = `{
  "openapi": "3.1.0",
  "info": {"title": "T <b>", "version": "v1", "description": "About <script>alert(1)</script>."},
  "tags": [{"name": "things", "description": "Things."}],
  "paths": {
    "/v1/things/{id}": {
      "delete": {"operationId": "dropThing", "tags": ["things"], "summary": "Drop", "parameters": [{"$ref": "#/components/parameters/ID"}],
        "responses": {"204": {"description": "Gone."}}},
      "get": {"operationId": "getThing", "tags": ["things"], "summary": "Get", "parameters": [{"$ref": "#/components/parameters/ID"}],
        "responses": {"200": {"description": "The thing.", "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Thing"}}}},
          "404": {"$ref": "#/components/responses/NotFound"}}}
    }
  },
  "components": {
    "parameters": {"ID": {"name": "id", "in": "path", "required": true, "schema": {"type": "integer", "format": "int64"}}},
    "responses": {"NotFound": {"description": "No such thing."}},
    "schemas": {"Thing": {"type": "object", "required": ["id"], "properties": {
      "id": {"type": "integer", "minimum": 1},
      "tags": {"type": "array", "items": {"type": "string"}},
      "state": {"enum": ["on", "off"]},
      "note": {"anyOf": [{"type": "string"}, {"type": "null"}], "description": "A <note>."}}}}
  }
}`

func TestRenderShowsOperationsAndSchemasEscaped(t *testing.T) {
	b, err := Render([]byte(small))
	if err != nil {
		t.Fatal(err)
	}
	page := string(b)
	for _, want := range []string{
		"<title>T &lt;b&gt; v1</title>",
		"About &lt;script&gt;alert(1)&lt;/script&gt;.",
		// GET before DELETE on one path; each with its resolved parameter.
		`<section id="op-getThing">`,
		`<td><code>id</code> <span class="req">required</span></td><td>path</td><td>integer (int64)</td>`,
		`<tr><td><code>200</code></td><td><a href="#schema-Thing"><code>Thing</code></a></td><td>The thing.</td></tr>`,
		`<tr><td><code>404</code></td><td></td><td>No such thing.</td></tr>`,
		`<section id="schema-Thing">`,
		`<td><code>id</code> <span class="req">required</span></td><td>integer</td><td>≥ 1</td>`,
		`<td><code>tags</code></td><td>array of string</td>`,
		`<td><code>state</code></td><td>one of <code>&#34;on&#34;</code>, <code>&#34;off&#34;</code></td>`,
		`<td><code>note</code></td><td>string or null</td><td></td><td>A &lt;note&gt;.</td>`,
	} {
		if !strings.Contains(page, want) {
			t.Errorf("the page does not hold %s", want)
		}
	}
	if strings.Index(page, `id="op-getThing"`) > strings.Index(page, `id="op-dropThing"`) {
		t.Error("DELETE is before GET on the same path")
	}
	if strings.Contains(page, "<script") || strings.Contains(page, "<b>") {
		t.Error("text of the document reached the page unescaped")
	}
}

func TestRenderRefusesAMissingReference(t *testing.T) {
	doc := strings.Replace(small, `"parameters": {"ID"`, `"parameters": {"Other"`, 1)
	if _, err := Render([]byte(doc)); err == nil || !strings.Contains(err.Error(), "#/components/parameters/ID is not in the document") {
		t.Fatalf("render = %v, want the missing parameter named", err)
	}
}
