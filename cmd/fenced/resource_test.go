package main

import (
	"bytes"
	"context"
	"encoding/base64"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/fenced/fenced"
)

// writeOutput is the --json form of a resource write.
type writeOutput struct {
	Key      string `json:"key"`
	Fence    int64  `json:"fence"`
	Version  int64  `json:"version"`
	Replayed bool   `json:"replayed"`
}

// resourceOutput is the --json form of a resource.
type resourceOutput struct {
	Key       string    `json:"key"`
	Value     string    `json:"value"`
	Fence     int64     `json:"fence"`
	Version   int64     `json:"version"`
	UpdatedAt time.Time `json:"updated_at"`
	// ValueBase64 holds a value that is not UTF-8.
	ValueBase64 string `json:"value_base64"`
}

func TestResourceWriteAndShow(t *testing.T) {
	t.Parallel()
	eachDB(t, func(t *testing.T, c cli) {
		var w writeOutput
		c.json(&w, "resource", "write", "invoice", "--fence", "3", "--value", "draft", "--json")
		if w != (writeOutput{Key: "invoice", Fence: 3, Version: 1}) {
			t.Errorf("first write: %+v", w)
		}
		c.json(&w, "resource", "write", "--fence", "3", "invoice", "--value", "sent", "--json")
		if w.Version != 2 || w.Fence != 3 {
			t.Errorf("write with the same fence: %+v, want version 2", w)
		}
		var r resourceOutput
		c.json(&r, "resource", "show", "invoice", "--json")
		if r.Key != "invoice" || r.Value != "sent" || r.Fence != 3 || r.Version != 2 || r.UpdatedAt.IsZero() || r.UpdatedAt.Location() != time.UTC {
			t.Errorf("show: %+v", r)
		}
		out := c.ok("resource", "show", "invoice")
		contains(t, "show", out, "sent")
		contains(t, "show", out, "version:")
		out = c.ok("resource", "write", "invoice", "--fence", "4", "--value", "")
		contains(t, "write", out, `wrote resource "invoice": fence 4, version 3`)
	})
}

func TestResourceStaleWriteExit4(t *testing.T) {
	t.Parallel()
	eachDB(t, func(t *testing.T, c cli) {
		c.ok("resource", "write", "k", "--fence", "5", "--value", "new")
		res := c.fails(4, "resource", "write", "k", "--fence", "4", "--value", "old")
		contains(t, "stderr", res.stderr, "stale fence")
		var r resourceOutput
		c.json(&r, "resource", "show", "k", "--json")
		if r.Value != "new" || r.Fence != 5 || r.Version != 1 {
			t.Errorf("after the stale write: %+v, want the fence-5 value untouched", r)
		}
	})
}

func TestResourceOperationReplay(t *testing.T) {
	t.Parallel()
	eachDB(t, func(t *testing.T, c cli) {
		var first, again writeOutput
		c.json(&first, "resource", "write", "k", "--fence", "1", "--value", "a", "--op", "op-1", "--json")
		c.json(&again, "resource", "write", "k", "--fence", "1", "--value", "a", "--op", "op-1", "--json")
		if first.Replayed || !again.Replayed || again.Version != first.Version || again.Fence != first.Fence {
			t.Errorf("replay: first %+v, again %+v; want the first outcome, replayed", first, again)
		}
		out := c.ok("resource", "write", "k", "--fence", "1", "--value", "a", "--op", "op-1")
		contains(t, "write", out, "replayed")
		// The same operation id for another value is refused (exit 2).
		res := c.fails(2, "resource", "write", "k", "--fence", "1", "--value", "b", "--op", "op-1")
		contains(t, "stderr", res.stderr, "another fence or value")
		var r resourceOutput
		c.json(&r, "resource", "show", "k", "--json")
		if r.Value != "a" || r.Version != 1 {
			t.Errorf("after replays: %+v, want value a, version 1", r)
		}
	})
}

func TestResourceErrors(t *testing.T) {
	t.Parallel()
	c := newCLI(t, "")
	c.db = "sqlite:" + t.TempDir() + "/fenced.db"
	c.ok("migrate") // the commands that only read do not migrate
	c.fails(5, "resource", "show", "missing")
	c.fails(2, "resource", "write", "k", "--fence", "-1", "--value", "v")
	c.fails(2, "resource", "write", "k", "--value", "v")
	c.fails(2, "resource", "write", "k", "--fence", "1")
	c.fails(2, "resource", "write", "", "--fence", "1", "--value", "v")
	c.fails(2, "resource", "show")
}

// runStdin runs the binary with stdin as its standard input.
func (c cli) runStdin(stdin string, args ...string) result {
	c.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := c.command(ctx, args...)
	var stdout, stderr bytes.Buffer
	cmd.Stdin, cmd.Stdout, cmd.Stderr = strings.NewReader(stdin), &stdout, &stderr
	cmd.Run()
	return result{stdout: stdout.String(), stderr: stderr.String(), code: cmd.ProcessState.ExitCode()}
}

// A value of the largest size, more than a command-line argument can hold,
// goes through --value-file from a file or from standard input, byte for
// byte (binary and a trailing newline included); one byte more is refused
// before the database is touched.
func TestResourceWriteValueFile(t *testing.T) {
	t.Parallel()
	eachDB(t, func(t *testing.T, c cli) {
		big := make([]byte, fenced.MaxValueBytes)
		for i := range big {
			big[i] = "fenced\n"[i%7]
		}
		file := filepath.Join(t.TempDir(), "big")
		if err := os.WriteFile(file, big, 0o600); err != nil {
			t.Fatal(err)
		}
		var w writeOutput
		c.json(&w, "resource", "write", "big", "--fence", "1", "--value-file", file, "--json")
		if w.Version != 1 {
			t.Fatalf("write from a file: %+v", w)
		}
		var r resourceOutput
		c.json(&r, "resource", "show", "big", "--json")
		if r.Value != string(big) {
			t.Fatalf("read back %d bytes, want the file's %d", len(r.Value), len(big))
		}

		in := "from stdin\n"
		if res := c.runStdin(in, "resource", "write", "piped", "--fence", "1", "--value-file", "-"); res.code != 0 {
			t.Fatalf("write from stdin: exit %d, %s", res.code, res.stderr)
		}
		c.json(&r, "resource", "show", "piped", "--json")
		if r.Value != in {
			t.Fatalf("stdin value read back as %q", r.Value)
		}
		// Bytes that are not UTF-8 are stored as they are.
		bin := filepath.Join(t.TempDir(), "bin")
		os.WriteFile(bin, []byte{0xff, 0, 1}, 0o600)
		c.ok("resource", "write", "bin", "--fence", "1", "--value-file", bin)
		c.json(&r, "resource", "show", "bin", "--json")
		if got, _ := base64.StdEncoding.DecodeString(r.ValueBase64); string(got) != "\xff\x00\x01" {
			t.Fatalf("binary value read back as %+v", r)
		}

		over := c.runStdin(string(big)+"x", "resource", "write", "over", "--fence", "1", "--value-file", "-")
		if over.code != exitUsage || !strings.HasPrefix(over.stderr, "fenced: invalid --value-file: standard input holds more than 1048576 bytes") {
			t.Fatalf("a value over the limit: exit %d, %q", over.code, over.stderr)
		}
		c.fails(exitNotFound, "resource", "show", "over")
		r2 := c.fails(exitUsage, "resource", "write", "k", "--fence", "1", "--value-file", filepath.Join(t.TempDir(), "missing"))
		contains(t, "stderr", r2.stderr, "--value-file")
		r2 = c.fails(exitUsage, "resource", "write", "k", "--fence", "1", "--value", "v", "--value-file", file)
		contains(t, "stderr", r2.stderr, "cannot be used together")
		r2 = c.fails(exitUsage, "resource", "write", "k", "--fence", "1")
		contains(t, "stderr", r2.stderr, "--value or --value-file")
	})
}
