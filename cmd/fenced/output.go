package main

import (
	"encoding/json"
	"fmt"
	"io"
	"text/tabwriter"

	"github.com/fenced/fenced"
	"github.com/fenced/fenced/fencedtype"
	"github.com/fenced/fenced/internal/display"
)

// writeJSON prints v as one line of JSON.
func writeJSON(w io.Writer, v any) error {
	return json.NewEncoder(w).Encode(v)
}

// leaseState is how a human reads a lease's Held and Released.
func leaseState(l *fenced.Lease) string {
	switch {
	case l.Held:
		return "held"
	case l.Released:
		return "released"
	default:
		return "expired"
	}
}

// writeLeaseTable prints leases as a table with a header.
func writeLeaseTable(w io.Writer, leases []*fenced.Lease) error {
	rows := [][]string{{"NAME", "OWNER", "FENCE", "STATE", "EXPIRES_AT"}}
	for _, l := range leases {
		rows = append(rows, []string{display.Name(l.Name), display.Name(l.Owner), fmt.Sprint(l.Fence),
			leaseState(l), fencedtype.FormatTime(l.ExpiresAt)})
	}
	return display.Table{Rows: rows}.Write(w)
}

// writeResource prints a resource as aligned "field: value" lines.
func writeResource(w io.Writer, r *fenced.Resource) error {
	tw := tabwriter.NewWriter(w, 0, 0, 1, ' ', 0)
	fmt.Fprintf(tw, "key:\t%s\n", display.Name(r.Key))
	fmt.Fprintf(tw, "fence:\t%d\n", r.Fence)
	fmt.Fprintf(tw, "version:\t%d\n", r.Version)
	fmt.Fprintf(tw, "updated_at:\t%s\n", fencedtype.FormatTime(r.UpdatedAt))
	fmt.Fprintf(tw, "value:\t%s\n", displayValue(r.Value))
	return tw.Flush()
}

// displayValue shows a value as it is when every character of it shows as
// itself, else (control or invisible characters, invalid UTF-8, the empty
// value) quoted with those escaped (display.Text).
func displayValue(b []byte) string { return display.Text(string(b)) }
