package server

import (
	_ "embed"
	"encoding/json"
	"net/http"
	"time"
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
