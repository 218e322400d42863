package fencedotel_test

import (
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// TestTheRootPackageDoesNotLinkOpenTelemetry: a program that uses fenced
// without this package links no OpenTelemetry, so the root package must
// not depend on it, directly or through another package.
func TestTheRootPackageDoesNotLinkOpenTelemetry(t *testing.T) {
	t.Parallel()
	out, err := exec.Command(filepath.Join(runtime.GOROOT(), "bin", "go"), "list", "-deps", "github.com/fenced/fenced").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	deps := strings.Fields(string(out))
	if len(deps) < 10 || !strings.Contains(string(out), "github.com/fenced/fenced/fencedtype") {
		t.Fatalf("go list -deps listed %d packages, not the root package's: %q", len(deps), out)
	}
	for _, d := range deps {
		if strings.HasPrefix(d, "go.opentelemetry.io/") {
			t.Errorf("the root package depends on %s", d)
		}
	}
	self, err := exec.Command(filepath.Join(runtime.GOROOT(), "bin", "go"), "list", "-deps", "github.com/fenced/fenced/fencedotel").Output()
	if err != nil || !strings.Contains(string(self), "go.opentelemetry.io/otel/trace") {
		t.Fatalf("the check cannot see this package's own dependency on OpenTelemetry: %v", err)
	}
}
