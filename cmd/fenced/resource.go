package main

import (
	"context"
	"encoding/base64"
	"fmt"
	"io"
	"os"
	"unicode/utf8"

	"github.com/fenced/fenced"
	"github.com/fenced/fenced/internal/lib/display"
	"github.com/fenced/fenced/internal/lib/wire"
	"github.com/spf13/cobra"
)

func newResourceCmd(a *app) *cobra.Command {
	cmd := group(&cobra.Command{
		Use:   "resource",
		Short: "Write and read the fenced resource store",
		Long: `The resource store keeps values that only the current lease holder may
change: a write carrying fence F is accepted iff F is at least the fence
stored with the value, and stores F. Once a newer holder has written, an
older one's writes fail as stale (exit 4).`,
	})
	cmd.AddCommand(newResourceWriteCmd(a), newResourceShowCmd(a))
	return cmd
}

func newResourceWriteCmd(a *app) *cobra.Command {
	var fence int64
	var value, valueFile, op string
	var v []byte
	cmd := callCmd[*fenced.ResourceWrite]{
		check: func(cmd *cobra.Command, args []string) error {
			if err := requireFlags(cmd, "fence"); err != nil {
				return err
			}
			fl := cmd.Flags()
			switch {
			case fl.Changed("value") && fl.Changed("value-file"):
				return usage("--value and --value-file cannot be used together")
			case !fl.Changed("value") && !fl.Changed("value-file"):
				return usage("required flag --value or --value-file not set")
			case fl.Changed("op") && op == "":
				// Read as no id, it would make the write not idempotent.
				return invalid("operation id", "must not be empty")
			}
			v = []byte(value)
			if fl.Changed("value-file") {
				var err error
				if v, err = a.readValue(valueFile); err != nil {
					return err
				}
			}
			return fenced.ValidateWriteResource(args[0], v, fence, fenced.WriteOptions{OperationID: op})
		},
		call: func(ctx context.Context, c *fenced.Client, args []string) (*fenced.ResourceWrite, error) {
			return c.WriteResource(ctx, args[0], v, fence, fenced.WriteOptions{OperationID: op})
		},
		text: func(w io.Writer, rw *fenced.ResourceWrite) error {
			replayed := ""
			if rw.Replayed {
				replayed = " (replayed: operation seen before, nothing applied)"
			}
			_, err := fmt.Fprintf(w, "wrote resource %s: fence %d, version %d%s\n", display.Quote(rw.Key), rw.Fence, rw.Version, replayed)
			return err
		},
	}.build(a, &cobra.Command{
		Use:   "write KEY --fence N (--value VALUE | --value-file PATH)",
		Short: "Store a value under a key, if the fence is not older than the stored one",
		Long: fmt.Sprintf(`Store a value under KEY iff --fence is at least the fence stored there, and
store the fence with it; a lower fence fails as stale (exit 4) and changes
nothing. Prints the key, the fence stored and the new version.

The value is --value, or the bytes of the file --value-file names (- reads
standard input), as they are: a trailing newline is part of the value.
Values are up to %d bytes (1 MiB); a command-line argument cannot hold more
than about 128 KiB, so a larger value, or one that is not text, needs
--value-file.

--op names one logical operation: repeating it (a retry after a lost reply,
same fence and value) returns the first outcome, marked replayed, and
applies nothing again; the same id with another fence or value is refused
(exit 2).`, fenced.MaxValueBytes),
		Example: `  fenced resource write invoice-42 --fence 7 --value paid
  fenced resource write report --fence "$FENCED_FENCE" --value-file report.pdf
  ./render | fenced resource write page --fence 7 --value-file - --op render-7 --json`,
		Args: exactArgs("KEY"),
	})
	fenceFlag(cmd, &fence, "fence of the lease the write is made under (required)")
	cmd.Flags().StringVar(&value, "value", "", "value to store (may be empty; up to about 128 KiB as an argument)")
	cmd.Flags().StringVar(&valueFile, "value-file", "", "store the bytes of this file as they are (- reads standard input)")
	cmd.Flags().StringVar(&op, "op", "", "operation id: a repeat returns the first outcome and applies nothing")
	return cmd
}

// readValue reads the value of --value-file: the file's bytes, or standard
// input's for "-". It reads at most one byte past fenced.MaxValueBytes, so
// that an endless input is refused as too large rather than read to its end.
func (a *app) readValue(path string) ([]byte, error) {
	name, r := "standard input", a.stdin
	if path != "-" {
		f, err := os.Open(path)
		if err != nil {
			return nil, usage("--value-file: %v", err)
		}
		defer f.Close()
		name, r = path, f
	}
	v, err := io.ReadAll(io.LimitReader(r, fenced.MaxValueBytes+1))
	if err != nil {
		return nil, fmt.Errorf("--value-file: read %s: %w", name, err)
	}
	if len(v) > fenced.MaxValueBytes {
		return nil, invalid("value", "%s holds more than %d bytes, the limit", name, fenced.MaxValueBytes)
	}
	return v, nil
}

func newResourceShowCmd(a *app) *cobra.Command {
	return callCmd[*fenced.Resource]{
		read:  true,
		check: func(_ *cobra.Command, args []string) error { return fenced.ValidateReadResource(args[0]) },
		call: func(ctx context.Context, c *fenced.Client, args []string) (*fenced.Resource, error) {
			r, err := c.ReadResource(ctx, args[0])
			return r, notFound("resource", args[0], err)
		},
		json: func(r *fenced.Resource) any { return resourceJSON(r) },
		text: writeResource,
	}.build(a, &cobra.Command{
		Use:   "show KEY",
		Short: "Show a resource: value, fence, version and time of the last write",
		Example: `  fenced resource show invoice-42
  fenced resource show invoice-42 --json | jq -r .value`,
		Args: exactArgs("KEY"),
	})
}

// resourceJSON is the --json form of r, as the HTTP service sends it: a
// value that is not UTF-8, which a JSON string cannot hold unchanged, is in
// value_base64 (standard encoding) with value empty.
func resourceJSON(r *fenced.Resource) wire.Resource {
	out := wire.ResourceFrom(r)
	if !utf8.Valid(r.Value) {
		out.Value, out.ValueBase64 = "", base64.StdEncoding.EncodeToString(r.Value)
	}
	return out
}
