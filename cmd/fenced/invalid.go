package main

import (
	"errors"
	"fmt"
	"strings"

	"github.com/fenced/fenced"
	"github.com/spf13/cobra"
)

// invalid is a value the command refuses itself, where the library would
// read it as "not given" (an empty --queue, --max-attempts 0). It has the
// shape of the library's own refusals, *fenced.InvalidError ("invalid
// FIELD: REASON", exit 2, no usage hint), with the library's name for the
// field, so that flagNamed names the flag in both alike.
func invalid(field, format string, args ...any) error {
	return &fenced.InvalidError{Field: field, Reason: fmt.Sprintf(format, args...)}
}

// fieldFlags lists the flags a field of the library's can come from, where
// they are not the field's own name with '_' and ' ' read as '-'; the first
// one given wins.
var fieldFlags = map[string][]string{
	"idempotency key":  {"key"},
	"unique by period": {"unique-period"},
	"unique states":    {"unique-states"},
	"unique args key":  {"unique-args-keys"},
	"unique args keys": {"unique-args-keys"},
	"operation id":     {"op"},
	"advance":          {"by"},
	"value":            {"value", "value-file"},
	"args":             {"args", "args-file"},
	"metadata":         {"metadata", "metadata-file"},
}

// flagNamed makes an invalid-input error about a field that cmd took from a
// flag name that flag: "invalid max_attempts: -5 is outside 1 to 1000"
// becomes "invalid --max-attempts: -5 is outside 1 to 1000", the shape of
// "--max-attempts 0", which the command refuses itself. Any other error, or
// one about a field that came from no flag (a positional NAME or ID), is
// returned as it is.
func flagNamed(cmd *cobra.Command, err error) error {
	var inv *fenced.InvalidError
	if cmd == nil || !errors.As(err, &inv) || err.Error() != inv.Error() {
		return err
	}
	names, ok := fieldFlags[inv.Field]
	if !ok {
		names = []string{strings.NewReplacer("_", "-", " ", "-").Replace(inv.Field)}
	}
	flag := ""
	for _, n := range names {
		f := cmd.Flags().Lookup(n)
		switch {
		case f == nil:
		case f.Changed:
			return &fenced.InvalidError{Field: "--" + n, Reason: inv.Reason}
		case flag == "":
			flag = n
		}
	}
	if flag == "" {
		return err
	}
	return &fenced.InvalidError{Field: "--" + flag, Reason: inv.Reason}
}

// annotationJobID marks a command whose argument is a job id, so that
// "job show -1", which the flag parser takes for an unknown flag -1, is
// refused as the bad id it is.
const annotationJobID = "fenced.job-id"

// negativeID turns the flag parser's refusal of "-1" as an unknown
// shorthand flag, on a command whose argument is a job id, into the
// refusal of that id; any other flag error is returned as it is.
func negativeID(cmd *cobra.Command, err error) error {
	var unknown interface{ GetSpecifiedShortnames() string }
	if cmd.Annotations[annotationJobID] == "" || !errors.As(err, &unknown) {
		return err
	}
	digits := unknown.GetSpecifiedShortnames()
	if digits == "" || strings.Trim(digits, "0123456789") != "" {
		return err
	}
	_, perr := fenced.ParseJobID("-" + digits)
	return perr
}
