package main

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/fenced/fenced"
	"github.com/fenced/fenced/internal/test/testdb"
)

// metadataOf is the metadata member of a job as "job show --json" and
// "job ls --json" print it.
type metadataOf struct {
	ID       int64           `json:"id"`
	Metadata json.RawMessage `json:"metadata"`
}

// "job enqueue --metadata" and "--metadata-file" (a file or stdin) store a
// JSON object with the job, which "job show" (both forms) and "job ls
// --json" print; what is not a JSON object, does not parse (said where),
// is too large or comes from both flags is refused before anything is
// enqueued.
func TestJobEnqueueMetadata(t *testing.T) {
	t.Parallel()
	c := newCLI(t, testdb.SQLite(t))
	c.ok("migrate")
	const parent = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
	meta := `{"traceparent": "` + parent + `", "tenant": 7}`
	var j metadataOf
	c.json(&j, "job", "enqueue", "k", "--metadata", meta, "--json")
	jsonEqual(t, "--metadata", j.Metadata, meta)

	file := filepath.Join(t.TempDir(), "meta.json")
	if err := os.WriteFile(file, []byte(`{"from": "file"}`), 0o600); err != nil {
		t.Fatal(err)
	}
	var f metadataOf
	c.json(&f, "job", "enqueue", "k", "--metadata-file", file, "--json")
	jsonEqual(t, "--metadata-file", f.Metadata, `{"from": "file"}`)
	cmd := c.command(context.Background(), "job", "enqueue", "k", "--metadata-file", "-", "--json")
	cmd.Stdin = strings.NewReader(`{"from": "stdin"}`)
	out, err := cmd.Output()
	var s metadataOf
	if err != nil || json.Unmarshal(out, &s) != nil {
		t.Fatalf("--metadata-file -: %v, %s", err, out)
	}
	jsonEqual(t, "--metadata-file -", s.Metadata, `{"from": "stdin"}`)
	var none metadataOf
	c.json(&none, "job", "enqueue", "k", "--json")
	if none.Metadata != nil && string(none.Metadata) != "null" {
		t.Fatalf("a job enqueued without --metadata has metadata %s", none.Metadata)
	}

	// Read back: job show, both forms, and job ls --json.
	var shown struct{ Job metadataOf }
	c.json(&shown, "job", "show", strconv.FormatInt(j.ID, 10), "--json")
	jsonEqual(t, "job show --json", shown.Job.Metadata, meta)
	text := c.ok("job", "show", strconv.FormatInt(j.ID, 10))
	if _, line, _ := strings.Cut(text, "\nmetadata:"); !strings.HasPrefix(strings.TrimLeft(line, " "), `{"traceparent":"`+parent+`","tenant":7}`+"\n") {
		t.Fatalf("job show does not print the metadata on one line: %s", text)
	}
	if text := c.ok("job", "show", strconv.FormatInt(none.ID, 10)); strings.Contains(text, "metadata:") {
		t.Fatalf("job show of a job without metadata says metadata: %s", text)
	}
	var listed []metadataOf
	c.json(&listed, "job", "ls", "--json")
	if len(listed) != 4 {
		t.Fatalf("job ls: %d jobs, want 4", len(listed))
	}
	jsonEqual(t, "job ls --json", listed[0].Metadata, meta)

	// Refused, with nothing enqueued.
	r := c.fails(2, "job", "enqueue", "k", "--metadata", "{\n  \"a\": 1,\n}")
	contains(t, "not JSON", r.stderr, "fenced: invalid --metadata: is not valid JSON: invalid character '}' looking for beginning of object key string at line 3, column 1")
	contains(t, "an array", c.fails(2, "job", "enqueue", "k", "--metadata", "[1]").stderr, "invalid --metadata: must be a JSON object")
	contains(t, "a key twice", c.fails(2, "job", "enqueue", "k", "--metadata", `{"a": 1, "a": 2}`).stderr, "invalid --metadata: gives the key")
	if err := os.WriteFile(file, []byte(`{"a": [1, 2}`), 0o600); err != nil {
		t.Fatal(err)
	}
	contains(t, "file not JSON", c.fails(2, "job", "enqueue", "k", "--metadata-file", file).stderr,
		"invalid --metadata-file: is not valid JSON: invalid character '}' after array element at line 1, column 12")
	big := filepath.Join(t.TempDir(), "big.json")
	if err := os.WriteFile(big, []byte(`{"a": "`+strings.Repeat("x", fenced.MaxMetadataBytes)+`"}`), 0o600); err != nil {
		t.Fatal(err)
	}
	contains(t, "too large", c.fails(2, "job", "enqueue", "k", "--metadata-file", big).stderr, "invalid --metadata-file: is 65537 bytes, the limit is 65536")
	contains(t, "both", c.fails(2, "job", "enqueue", "k", "--metadata", "{}", "--metadata-file", file).stderr, "cannot be used together")
	contains(t, "stdin twice", c.fails(2, "job", "enqueue", "k", "--args-file", "-", "--metadata-file", "-").stderr, "cannot both read stdin")
	contains(t, "missing file", c.fails(2, "job", "enqueue", "k", "--metadata-file", filepath.Join(t.TempDir(), "missing.json")).stderr, "--metadata-file:")
	c.json(&listed, "job", "ls", "--json")
	if len(listed) != 4 {
		t.Fatalf("job ls after the refusals: %d jobs, want 4", len(listed))
	}
}
