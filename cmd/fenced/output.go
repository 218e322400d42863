package main

import (
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"text/tabwriter"
	"unicode"
	"unicode/utf8"

	"github.com/fenced/fenced"
	"github.com/fenced/fenced/fencedtype"
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
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "NAME\tOWNER\tFENCE\tSTATE\tEXPIRES_AT")
	for _, l := range leases {
		fmt.Fprintf(tw, "%s\t%s\t%d\t%s\t%s\n", l.Name, l.Owner, l.Fence, leaseState(l), fencedtype.FormatTime(l.ExpiresAt))
	}
	return tw.Flush()
}

// writeResource prints a resource as aligned "field: value" lines.
func writeResource(w io.Writer, r *fenced.Resource) error {
	tw := tabwriter.NewWriter(w, 0, 0, 1, ' ', 0)
	fmt.Fprintf(tw, "key:\t%s\n", r.Key)
	fmt.Fprintf(tw, "fence:\t%d\n", r.Fence)
	fmt.Fprintf(tw, "version:\t%d\n", r.Version)
	fmt.Fprintf(tw, "updated_at:\t%s\n", fencedtype.FormatTime(r.UpdatedAt))
	fmt.Fprintf(tw, "value:\t%s\n", displayValue(r.Value))
	return tw.Flush()
}

// displayValue shows printable UTF-8 as it is and anything else (control
// characters, invalid UTF-8, the empty value) as a quoted Go string.
func displayValue(b []byte) string {
	s := string(b)
	if s == "" || !utf8.ValidString(s) {
		return strconv.Quote(s)
	}
	for _, r := range s {
		if unicode.IsControl(r) {
			return strconv.Quote(s)
		}
	}
	return s
}
