package main

import (
	"encoding/json"
	"fmt"
	"io"
	"text/tabwriter"

	"github.com/fenced/fenced"
	"github.com/fenced/fenced/fencedtype"
	"github.com/fenced/fenced/internal/lib/display"
)

// writeJSON prints v as one line of JSON.
func writeJSON(w io.Writer, v any) error {
	return json.NewEncoder(w).Encode(v)
}

// leaseState is how a human reads a lease's Held, Released and Advanced.
func leaseState(l *fenced.Lease) string {
	switch {
	case l.Held:
		return "held"
	case l.Advanced:
		return "advanced"
	case l.Released:
		return "released"
	default:
		return "expired"
	}
}

// advancedNote explains the rows of a lease table that a fence advance
// ended.
const advancedNote = "advanced: a fence advance ended the lease; FENCE is the floor it set, which no owner held;\n" +
	"          the next grant gets a higher fence"

// writeLeaseTable prints leases as a table with a header. HELD_UNTIL is
// when the generation stops or stopped being held: its expiry, or when it
// was released. A lease a fence advance ended shows the floor as its fence
// beside no owner (its last owner held a lower fence), and a note says so.
func writeLeaseTable(w io.Writer, leases []*fenced.Lease) error {
	rows := [][]string{{"NAME", "OWNER", "FENCE", "STATE", "HELD_UNTIL"}}
	advanced := false
	for _, l := range leases {
		owner, until := display.Name(l.Owner), fencedtype.FormatTime(l.ExpiresAt)
		if l.Advanced {
			owner, until, advanced = "-", "-", true
		}
		rows = append(rows, []string{display.Name(l.Name), owner, fmt.Sprint(l.Fence), leaseState(l), until})
	}
	if err := (display.Table{Rows: rows}).Write(w); err != nil {
		return err
	}
	if advanced {
		_, err := fmt.Fprintf(w, "\n%s\n", advancedNote)
		return err
	}
	return nil
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
