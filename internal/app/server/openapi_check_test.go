package server

import (
	"bytes"
	"fmt"
	"net/http/httptest"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// apiDocURL is the name the OpenAPI document is loaded under for the schema
// compiler: references inside it ("#/components/schemas/Lease") resolve
// against it. Nothing is fetched from it.
const apiDocURL = "https://fenced.example/v1/openapi.json"

// apiDoc is the OpenAPI document as a test reads it: decoded, and its
// schemas compiled as JSON Schema 2020-12 (the dialect of OpenAPI 3.1) with
// formats asserted, so that "date-time" is checked.
type apiDoc struct {
	doc map[string]any
	c   *jsonschema.Compiler

	mu    sync.Mutex
	cache map[string]*jsonschema.Schema // by JSON pointer
}

// httpMethods are the operations a path item of OpenAPI 3.1 may hold.
var httpMethods = []string{"get", "put", "post", "delete", "options", "head", "patch", "trace"}

func loadAPIDoc(t testing.TB) *apiDoc {
	t.Helper()
	v, err := jsonschema.UnmarshalJSON(bytes.NewReader(openAPIDocument))
	if err != nil {
		t.Fatalf("openapi.json is not JSON: %v", err)
	}
	doc, ok := v.(map[string]any)
	if !ok {
		t.Fatal("openapi.json is not a JSON object")
	}
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft2020)
	c.AssertFormat()
	if err := c.AddResource(apiDocURL, doc); err != nil {
		t.Fatalf("load openapi.json: %v", err)
	}
	return &apiDoc{doc: doc, c: c, cache: map[string]*jsonschema.Schema{}}
}

// operations is every documented operation as "METHOD PATH", the form of a
// ServeMux pattern.
func (d *apiDoc) operations() map[string]bool {
	out := map[string]bool{}
	paths, _ := d.doc["paths"].(map[string]any)
	for p, item := range paths {
		ops, _ := item.(map[string]any)
		for _, m := range httpMethods {
			if _, ok := ops[m]; ok {
				out[strings.ToUpper(m)+" "+p] = true
			}
		}
	}
	return out
}

// operation is the operation object of method and path (a path template).
func (d *apiDoc) operation(method, path string) (map[string]any, error) {
	paths, _ := d.doc["paths"].(map[string]any)
	item, _ := paths[path].(map[string]any)
	op, ok := item[strings.ToLower(method)].(map[string]any)
	if !ok {
		return nil, fmt.Errorf("%s %s is not documented", method, path)
	}
	return op, nil
}

// pointer is the JSON pointer of a location given by its tokens.
func pointer(tokens ...string) string {
	var b strings.Builder
	for _, tok := range tokens {
		b.WriteString("/")
		b.WriteString(strings.NewReplacer("~", "~0", "/", "~1").Replace(tok))
	}
	return b.String()
}

// at is the value at a JSON pointer of the document.
func (d *apiDoc) at(ptr string) (any, bool) {
	var v any = d.doc
	for _, tok := range strings.Split(ptr, "/")[1:] {
		tok = strings.NewReplacer("~1", "/", "~0", "~").Replace(tok)
		m, ok := v.(map[string]any)
		if !ok {
			return nil, false
		}
		if v, ok = m[tok]; !ok {
			return nil, false
		}
	}
	return v, true
}

// replySchemaPointer is the JSON pointer of the schema of the reply to
// method and path with status, following a reference to
// components/responses. It fails when the operation does not document that
// status (there is no "default" response in the document).
func (d *apiDoc) replySchemaPointer(method, path string, status int) (string, error) {
	op, err := d.operation(method, path)
	if err != nil {
		return "", err
	}
	responses, _ := op["responses"].(map[string]any)
	code := strconv.Itoa(status)
	resp, ok := responses[code].(map[string]any)
	if !ok {
		return "", fmt.Errorf("status %d is not documented for %s %s", status, method, path)
	}
	base := pointer("paths", path, strings.ToLower(method), "responses", code)
	if ref, ok := resp["$ref"].(string); ok {
		if !strings.HasPrefix(ref, "#/components/responses/") {
			return "", fmt.Errorf("%s %s %d: reference %s is not to components/responses", method, path, status, ref)
		}
		base = strings.TrimPrefix(ref, "#")
	}
	ptr := base + pointer("content", "application/json", "schema")
	if _, ok := d.at(ptr); !ok {
		return "", fmt.Errorf("%s %s %d: no application/json schema at %s", method, path, status, ptr)
	}
	return ptr, nil
}

// schema compiles the schema at a JSON pointer of the document, once.
func (d *apiDoc) schema(ptr string) (*jsonschema.Schema, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if s, ok := d.cache[ptr]; ok {
		return s, nil
	}
	// The fragment is a URI fragment: the pointer's { and } (of path
	// templates) are percent-encoded.
	s, err := d.c.Compile(apiDocURL + "#" + (&url.URL{Fragment: ptr}).EscapedFragment())
	if err != nil {
		return nil, err
	}
	d.cache[ptr] = s
	return s, nil
}

// validate checks a reply body against the schema the document gives for
// method, path (a template) and status.
func (d *apiDoc) validate(method, path string, status int, body []byte) error {
	ptr, err := d.replySchemaPointer(method, path, status)
	if err != nil {
		return err
	}
	s, err := d.schema(ptr)
	if err != nil {
		return fmt.Errorf("compile %s: %w", ptr, err)
	}
	v, err := jsonschema.UnmarshalJSON(bytes.NewReader(body))
	if err != nil {
		return fmt.Errorf("%s %s %d: the body is not JSON: %v: %s", method, path, status, err, body)
	}
	if err := s.Validate(v); err != nil {
		return fmt.Errorf("%s %s %d: the body %s does not match %s: %v", method, path, status, body, ptr, err)
	}
	return nil
}

// checker validates every answer a test's requests get against the
// document, and remembers which operation and status each was.
type checker struct {
	t    *testing.T
	e    *env
	doc  *apiDoc
	seen map[string]bool // "METHOD PATH STATUS"
}

func newChecker(t *testing.T, e *env, doc *apiDoc) *checker {
	return &checker{t: t, e: e, doc: doc, seen: map[string]bool{}}
}

// pattern is the route the server's ServeMux takes a request by: its
// method and path template.
func (c *checker) pattern(method, target string) (string, string) {
	c.t.Helper()
	_, p := c.e.srv.api.Handler(httptest.NewRequest(method, target, nil))
	m, path, ok := strings.Cut(p, " ")
	if !ok {
		c.t.Fatalf("%s %s: no route takes it", method, target)
	}
	return m, path
}

// call sends a request (see env.send), wants status, and validates the
// answer against the schema the document gives for its route and status.
func (c *checker) call(want int, method, target string, body any, header ...string) response {
	c.t.Helper()
	r, err := c.e.send(method, target, body, header...)
	if err != nil {
		c.t.Fatalf("%s %s: %v", method, target, err)
	}
	if r.status != want {
		c.t.Fatalf("%s %s: %d %s, want %d", method, target, r.status, r.raw, want)
	}
	c.check(method, target, r)
	return r
}

// check validates one answer to method and target.
func (c *checker) check(method, target string, r response) {
	c.t.Helper()
	m, path := c.pattern(method, target)
	if ct := r.header.Get("Content-Type"); ct != "application/json" {
		c.t.Errorf("%s %s: Content-Type %q", method, target, ct)
	}
	if err := c.doc.validate(m, path, r.status, r.raw); err != nil {
		c.t.Errorf("%s: %v", target, err)
	}
	c.seen[fmt.Sprintf("%s %s %d", m, path, r.status)] = true
}

// unseen lists the documented operations the checker saw no answer to.
func (c *checker) unseen() []string {
	var out []string
	for op := range c.doc.operations() {
		found := false
		for s := range c.seen {
			if strings.HasPrefix(s, op+" ") {
				found = true
				break
			}
		}
		if !found {
			out = append(out, op)
		}
	}
	sort.Strings(out)
	return out
}
