package fencedtype

import (
	"go/build"
	"strings"
	"testing"
)

// TestImportsNothingOfFenced: a driver outside this module can depend on
// fencedtype alone, so it imports no other package of the module.
func TestImportsNothingOfFenced(t *testing.T) {
	t.Parallel()
	pkg, err := build.ImportDir(".", 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(pkg.Imports) == 0 {
		t.Fatal("no imports read; the check is looking at the wrong package")
	}
	for _, path := range pkg.Imports {
		if path == "github.com/fenced/fenced" || strings.HasPrefix(path, "github.com/fenced/fenced/") {
			t.Errorf("fencedtype imports %s", path)
		}
	}
}
