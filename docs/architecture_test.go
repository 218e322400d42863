// Package docs holds the project's documents; its test holds
// architecture.md to the code it describes.
package docs

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// TestArchitectureNamesWhatExists: every backticked name in
// architecture.md that reads as Go (an identifier, Type.Member or
// package.Name, a *Type, a call) is declared somewhere in the module, every
// backticked path exists, and every Group/Subtest names a conformance group
// and subtest of the suite. Names in other forms (commands, SQL, HTTP
// routes, JSON fields, lower-case words) are left alone.
func TestArchitectureNamesWhatExists(t *testing.T) {
	doc, err := os.ReadFile("architecture.md")
	if err != nil {
		t.Fatal(err)
	}
	code := declaredNames(t, "..")
	for _, span := range backticked(string(doc)) {
		switch kind, name := classify(span); kind {
		case spanPath:
			if !pathExists("..", name) {
				t.Errorf("architecture.md names `%s`: no such file or directory", span)
			}
		case spanSubtest:
			for _, part := range strings.Split(name, "/") {
				if !code.strings[part] && !code.names[part] {
					t.Errorf("architecture.md names `%s`: %q is no test group or subtest name in the code", span, part)
				}
			}
		case spanGo:
			if !code.has(name) {
				t.Errorf("architecture.md names `%s`: %s is declared nowhere in the module", span, name)
			}
		}
	}
}

// backticked returns the text of each `code span` in markdown text,
// outside fenced code blocks.
func backticked(md string) []string {
	var out []string
	fenced := false
	for _, line := range strings.Split(md, "\n") {
		if strings.HasPrefix(strings.TrimSpace(line), "```") {
			fenced = !fenced
			continue
		}
		if fenced {
			continue
		}
		for _, m := range spanRE.FindAllStringSubmatch(line, -1) {
			out = append(out, m[1])
		}
	}
	return out
}

var spanRE = regexp.MustCompile("`([^`]+)`")

type spanKind int

const (
	spanOther spanKind = iota
	spanGo
	spanPath
	spanSubtest
)

// fileExts are the extensions a backticked file name ends in.
var fileExts = map[string]bool{".go": true, ".md": true, ".sql": true, ".sh": true, ".json": true, ".py": true}

// external are the names architecture.md uses that other modules declare.
var external = map[string]bool{
	"Txn": true, // etcd's clientv3.Txn
}

var (
	goNameRE  = regexp.MustCompile(`^\*?([A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)?)(\(.*\))?$`)
	pathRE    = regexp.MustCompile(`^[A-Za-z0-9_.*/-]+$`)
	subtestRE = regexp.MustCompile(`^[A-Z][A-Za-z0-9]*(/[A-Z][A-Za-z0-9]*)+$`)
)

// classify says how a span is checked, and the name to check.
func classify(span string) (spanKind, string) {
	switch {
	case subtestRE.MatchString(span):
		return spanSubtest, span
	case pathRE.MatchString(span) && (strings.Contains(span, "/") || fileExts[filepath.Ext(span)]):
		return spanPath, span
	}
	m := goNameRE.FindStringSubmatch(span)
	if m == nil {
		return spanOther, ""
	}
	name := m[1]
	if strings.Contains(name, "_") || strings.ToUpper(name) == name || strings.ToLower(name) == name {
		return spanOther, "" // SQL, a table, a metric, a JSON field, a word
	}
	return spanGo, name
}

// pathExists reports whether a path (possibly a glob) names something in
// the repository at root, or in one of its packages' directories.
func pathExists(root, p string) bool {
	if strings.HasSuffix(p, ".go") && !strings.Contains(p, "/") {
		found := false
		_ = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
			if err == nil && !d.IsDir() && d.Name() == p {
				found = true
			}
			return nil
		})
		return found
	}
	matches, _ := filepath.Glob(filepath.Join(root, p))
	if len(matches) > 0 {
		return true
	}
	// A path relative to a package, such as migrations/*.sql.
	found := false
	_ = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil || !d.IsDir() || found {
			return nil
		}
		if m, _ := filepath.Glob(filepath.Join(path, p)); len(m) > 0 {
			found = true
		}
		return nil
	})
	return found
}

// names is what the module declares: every identifier declared at top
// level, every method and field as Type.Member, every package.Name, and
// every string literal (the names of test groups and subtests).
type names struct {
	names   map[string]bool
	pairs   map[string]bool
	strings map[string]bool
}

func (n names) has(name string) bool {
	if strings.Contains(name, ".") {
		return n.pairs[name]
	}
	// A conformance group is named by the string its t.Run gives.
	return n.names[name] || n.strings[name] || external[name]
}

// declaredNames parses every Go file of the module at root.
func declaredNames(t *testing.T, root string) names {
	t.Helper()
	n := names{names: map[string]bool{}, pairs: map[string]bool{}, strings: map[string]bool{}}
	fset := token.NewFileSet()
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (strings.HasPrefix(d.Name(), ".") || d.Name() == "testdata") && path != root {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, ".go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		n.add(f)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return n
}

func (n names) add(f *ast.File) {
	pkg := f.Name.Name
	n.names[pkg] = true
	decl := func(name string) {
		n.names[name] = true
		n.pairs[pkg+"."+name] = true
	}
	for _, d := range f.Decls {
		switch d := d.(type) {
		case *ast.FuncDecl:
			if d.Recv == nil || len(d.Recv.List) == 0 {
				decl(d.Name.Name)
				continue
			}
			n.names[d.Name.Name] = true
			if r := receiver(d.Recv.List[0].Type); r != "" {
				n.pairs[r+"."+d.Name.Name] = true
			}
		case *ast.GenDecl:
			for _, s := range d.Specs {
				switch s := s.(type) {
				case *ast.TypeSpec:
					decl(s.Name.Name)
					n.addMembers(s.Name.Name, s.Type)
				case *ast.ValueSpec:
					for _, id := range s.Names {
						decl(id.Name)
					}
				}
			}
		}
	}
	ast.Inspect(f, func(x ast.Node) bool {
		if lit, ok := x.(*ast.BasicLit); ok && lit.Kind == token.STRING {
			if s, err := strconv.Unquote(lit.Value); err == nil {
				n.strings[s] = true
			}
		}
		return true
	})
}

// addMembers records the fields of a struct type and the methods of an
// interface type as Type.Member.
func (n names) addMembers(typ string, e ast.Expr) {
	var fields *ast.FieldList
	switch e := e.(type) {
	case *ast.StructType:
		fields = e.Fields
	case *ast.InterfaceType:
		fields = e.Methods
	}
	if fields == nil {
		return
	}
	for _, f := range fields.List {
		for _, id := range f.Names {
			n.pairs[typ+"."+id.Name] = true
			n.names[id.Name] = true
		}
	}
}

// receiver is the type name of a method's receiver.
func receiver(e ast.Expr) string {
	switch e := e.(type) {
	case *ast.StarExpr:
		return receiver(e.X)
	case *ast.IndexExpr:
		return receiver(e.X)
	case *ast.IndexListExpr:
		return receiver(e.X)
	case *ast.Ident:
		return e.Name
	}
	return ""
}
