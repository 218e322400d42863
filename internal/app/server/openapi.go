package server

import (
	_ "embed"
	"encoding/json"
	"net/http"
	"sync"
	"time"

	"github.com/fenced/fenced/internal/app/apidoc"
)

// openAPIDocument is the OpenAPI 3.1 description of every route in
// apiRoutes: request bodies, replies and errors by status code. It is
// written by hand; openapi_test.go holds it to the server (every route
// documented, every documented route registered, and the replies of a
// scripted session valid against its schemas).
//
//go:embed openapi.json
var openAPIDocument []byte

// openAPI: GET /v1/openapi.json → the OpenAPI document. Served without a
// token, like /healthz (see openRoute); it carries no database time, as
// nothing in it was decided by the database.
func (s *Server) openAPI(*http.Request) (*reply, error) {
	return ok(json.RawMessage(openAPIDocument), time.Time{}), nil
}

// openAPIPage is the OpenAPI document rendered for people (apidoc), once.
var openAPIPage = sync.OnceValues(func() ([]byte, error) { return apidoc.Render(openAPIDocument) })

// openAPIHTML: GET /v1/openapi.html → the OpenAPI document as a page for
// people: the operations with their parameters, bodies and responses, and
// the schemas. Open, as the document is; not an operation of the document
// (its body is HTML, not JSON), as GET /metrics is not. The page runs no
// script and loads nothing from elsewhere, and its policy says so.
func (s *Server) openAPIHTML(w http.ResponseWriter, r *http.Request) {
	noQuery := withoutQuery(func(*http.Request) (*reply, error) { return nil, nil })
	if _, err := noQuery(r); err != nil {
		s.writeError(w, r, s.errorFor(r, err))
		return
	}
	page, err := openAPIPage()
	if err != nil {
		s.writeError(w, r, s.errorFor(r, err))
		return
	}
	h := w.Header()
	h.Set("Content-Type", "text/html; charset=utf-8")
	h.Set("Content-Security-Policy", "default-src 'none'; style-src 'unsafe-inline'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'")
	h.Set("X-Content-Type-Options", "nosniff")
	w.Write(page) // a write error means the client left
}
