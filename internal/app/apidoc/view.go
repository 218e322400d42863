package apidoc

import (
	"encoding/json"
	"fmt"
	"html/template"
	"sort"
	"strings"
)

// view is what the page shows, in its order.
type view struct {
	Title, Version, Description string
	Groups                      []group
	Schemas                     []schemaView
}

// group is a tag's operations, sorted by path, then method.
type group struct {
	Name, Description string
	Ops               []opView
}

type opView struct {
	ID, Method, Path     string
	Summary, Description string
	Params               []*parameter
	Body                 schema // nil: no request body
	BodyRequired         bool
	Responses            []respView
}

type respView struct {
	Status, Description string
	Schema              schema // nil: no body
}

type schemaView struct {
	Name, Description string
	Schema            schema
	Props             []propView
}

type propView struct {
	Name        string
	Required    bool
	Schema      schema
	Description string
	Limits      string
}

var methodOrder = map[string]int{"get": 0, "post": 1, "put": 2, "patch": 3, "delete": 4}

func (d *doc) view() (*view, error) {
	v := &view{Title: d.Info.Title, Version: d.Info.Version, Description: d.Info.Description}
	byTag := map[string]*group{}
	for _, t := range d.Tags {
		v.Groups = append(v.Groups, group{Name: t.Name, Description: t.Description})
	}
	for i := range v.Groups {
		byTag[v.Groups[i].Name] = &v.Groups[i]
	}
	for path, methods := range d.Paths {
		for method, op := range methods {
			o, err := d.opView(path, method, op)
			if err != nil {
				return nil, err
			}
			tag := "other"
			if len(op.Tags) > 0 {
				tag = op.Tags[0]
			}
			g := byTag[tag]
			if g == nil {
				v.Groups = append(v.Groups, group{Name: tag})
				g = &v.Groups[len(v.Groups)-1]
				for i := range v.Groups { // the append may have moved them
					byTag[v.Groups[i].Name] = &v.Groups[i]
				}
			}
			g.Ops = append(g.Ops, o)
		}
	}
	for i := range v.Groups {
		ops := v.Groups[i].Ops
		sort.Slice(ops, func(a, b int) bool {
			if ops[a].Path != ops[b].Path {
				return ops[a].Path < ops[b].Path
			}
			return methodOrder[strings.ToLower(ops[a].Method)] < methodOrder[strings.ToLower(ops[b].Method)]
		})
	}
	names := make([]string, 0, len(d.Components.Schemas))
	for n := range d.Components.Schemas {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		v.Schemas = append(v.Schemas, schemaOf(n, d.Components.Schemas[n]))
	}
	return v, nil
}

func (d *doc) opView(path, method string, op *operation) (opView, error) {
	o := opView{ID: op.OperationID, Method: strings.ToUpper(method), Path: path, Summary: op.Summary, Description: op.Description}
	for _, p := range op.Parameters {
		if p.Ref != "" {
			q := d.Components.Parameters[refName(p.Ref, "parameters")]
			if q == nil {
				return o, fmt.Errorf("%s %s: parameter %s is not in the document", o.Method, path, p.Ref)
			}
			p = q
		}
		o.Params = append(o.Params, p)
	}
	if b := op.RequestBody; b != nil {
		o.Body, o.BodyRequired = jsonSchema(b.Content), b.Required
		if o.Body == nil {
			o.Body = schema{}
		}
	}
	statuses := make([]string, 0, len(op.Responses))
	for s := range op.Responses {
		statuses = append(statuses, s)
	}
	sort.Strings(statuses)
	for _, s := range statuses {
		r := op.Responses[s]
		if r.Ref != "" {
			q := d.Components.Responses[refName(r.Ref, "responses")]
			if q == nil {
				return o, fmt.Errorf("%s %s: response %s is not in the document", o.Method, path, r.Ref)
			}
			r = q
		}
		o.Responses = append(o.Responses, respView{Status: s, Description: r.Description, Schema: jsonSchema(r.Content)})
	}
	return o, nil
}

// jsonSchema is the schema of a body's application/json content (or its
// only content), nil when there is none.
func jsonSchema(content map[string]struct{ Schema schema }) schema {
	if c, ok := content["application/json"]; ok {
		return c.Schema
	}
	for _, c := range content {
		return c.Schema
	}
	return nil
}

func schemaOf(name string, s schema) schemaView {
	v := schemaView{Name: name, Schema: s, Description: str(s["description"])}
	props, _ := s["properties"].(map[string]any)
	required := map[string]bool{}
	if r, ok := s["required"].([]any); ok {
		for _, n := range r {
			required[str(n)] = true
		}
	}
	names := make([]string, 0, len(props))
	for n := range props {
		names = append(names, n)
	}
	sort.Slice(names, func(a, b int) bool { // required first, then by name
		if required[names[a]] != required[names[b]] {
			return required[names[a]]
		}
		return names[a] < names[b]
	})
	for _, n := range names {
		p, _ := props[n].(map[string]any)
		v.Props = append(v.Props, propView{Name: n, Required: required[n], Schema: p,
			Description: str(p["description"]), Limits: limits(p)})
	}
	return v
}

// limits lists a schema's constraints beyond its type.
func limits(s schema) string {
	var l []string
	for _, k := range []struct{ key, say string }{{"minimum", "≥ "}, {"exclusiveMinimum", "> "}, {"maximum", "≤ "},
		{"exclusiveMaximum", "< "}, {"minLength", "length ≥ "}, {"maxLength", "length ≤ "}, {"minItems", "items ≥ "},
		{"maxItems", "items ≤ "}, {"pattern", "matches "}, {"default", "default "}} {
		if x, ok := s[k.key]; ok {
			l = append(l, k.say+literal(x))
		}
	}
	return strings.Join(l, ", ")
}

// typeHTML writes a schema's type for reading: a $ref as a link to the
// schema's section, "array of …", "A or B", a const or enum by its values.
func typeHTML(s schema) template.HTML {
	esc := template.HTMLEscapeString
	switch {
	case s == nil:
		return ""
	case s["$ref"] != nil:
		n := refName(str(s["$ref"]), "schemas")
		return template.HTML(`<a href="#schema-` + esc(n) + `"><code>` + esc(n) + `</code></a>`)
	case s["const"] != nil:
		return template.HTML("<code>" + esc(literal(s["const"])) + "</code>")
	case s["enum"] != nil:
		vals, _ := s["enum"].([]any)
		parts := make([]string, len(vals))
		for i, x := range vals {
			parts[i] = "<code>" + esc(literal(x)) + "</code>"
		}
		return template.HTML("one of " + strings.Join(parts, ", "))
	}
	for _, k := range []string{"anyOf", "oneOf"} {
		if alts, ok := s[k].([]any); ok {
			parts := make([]string, len(alts))
			for i, a := range alts {
				m, _ := a.(map[string]any)
				parts[i] = string(typeHTML(m))
			}
			return template.HTML(strings.Join(parts, " or "))
		}
	}
	var t string
	switch x := s["type"].(type) {
	case string:
		t = esc(x)
	case []any:
		parts := make([]string, len(x))
		for i, y := range x {
			parts[i] = esc(str(y))
		}
		t = strings.Join(parts, " or ")
	default:
		return "any JSON"
	}
	if f := str(s["format"]); f != "" {
		t += " (" + esc(f) + ")"
	}
	if items, ok := s["items"].(map[string]any); ok && t == "array" {
		t = "array of " + string(typeHTML(items))
	}
	return template.HTML(t)
}

// refName is X of "#/components/<kind>/X".
func refName(ref, kind string) string {
	return strings.TrimPrefix(ref, "#/components/"+kind+"/")
}

func str(x any) string {
	s, _ := x.(string)
	return s
}

// literal is a JSON value as JSON text.
func literal(x any) string {
	b, err := json.Marshal(x)
	if err != nil {
		return fmt.Sprint(x)
	}
	return string(b)
}
