// Package apidoc renders an OpenAPI 3.1 document as one HTML page for
// people: its operations by tag (method, path, summary, parameters, request
// body and responses) and its schemas (each property's type, whether it is
// required, its constraints and description), with a schema named by $ref
// a link to its section. The page is self-contained: no script, no style
// sheet or font from elsewhere. fenced serve serves the API's document
// this way at /v1/openapi.html.
package apidoc

import (
	"bytes"
	_ "embed"
	"encoding/json"
	"fmt"
	"html/template"
	"strings"
)

//go:embed page.html
var pageHTML string

var page = template.Must(template.New("page").Funcs(template.FuncMap{"type": typeHTML, "lower": strings.ToLower}).Parse(pageHTML))

// doc is the part of an OpenAPI document the page shows.
type doc struct {
	Info struct {
		Title, Version, Description string
	}
	Tags []struct {
		Name, Description string
	}
	Paths      map[string]map[string]*operation
	Components struct {
		Parameters map[string]*parameter
		Responses  map[string]*response
		Schemas    map[string]schema
	}
}

type operation struct {
	OperationID string `json:"operationId"`
	Tags        []string
	Summary     string
	Description string
	Parameters  []*parameter
	RequestBody *struct {
		Required bool
		Content  map[string]struct{ Schema schema }
	} `json:"requestBody"`
	Responses map[string]*response
}

type parameter struct {
	Ref         string `json:"$ref"`
	Name, In    string
	Required    bool
	Description string
	Schema      schema
}

type response struct {
	Ref         string `json:"$ref"`
	Description string
	Content     map[string]struct{ Schema schema }
}

// schema is a JSON Schema, kept as decoded: the page reads a few keywords.
type schema map[string]any

// Render returns the page of the OpenAPI document b.
func Render(b []byte) ([]byte, error) {
	var d doc
	if err := json.Unmarshal(b, &d); err != nil {
		return nil, fmt.Errorf("read the OpenAPI document: %w", err)
	}
	v, err := d.view()
	if err != nil {
		return nil, err
	}
	var out bytes.Buffer
	if err := page.Execute(&out, v); err != nil {
		return nil, fmt.Errorf("render the OpenAPI document: %w", err)
	}
	return out.Bytes(), nil
}
