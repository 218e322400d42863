package pgdriver_test

import (
	"context"
	"net/url"
	"strings"
	"testing"

	"github.com/fenced/fenced/driver/pgdriver"
	"github.com/fenced/fenced/internal/test/testdb"
)

// A grant must never be committed asynchronously (docs/design.md §7): whatever asks
// for synchronous_commit=off, the driver's connections run with it on.
func TestSynchronousCommitIsNeverOff(t *testing.T) {
	t.Parallel()
	base := testdb.Postgres(t)
	for name, mod := range map[string]func(url.Values){
		"RuntimeParam": func(q url.Values) { q.Set("synchronous_commit", "off") },
		"OptionsFlag":  func(q url.Values) { q.Set("options", "-c synchronous_commit=off") },
		"Local":        func(q url.Values) { q.Set("synchronous_commit", "local") },
	} {
		t.Run(name, func(t *testing.T) {
			u, _ := url.Parse(base)
			q := u.Query()
			mod(q)
			u.RawQuery = strings.ReplaceAll(q.Encode(), "+", "%20") // pgx reads %20, not +, as a space
			d, err := pgdriver.Open(context.Background(), u.String())
			if err != nil {
				t.Fatal(err)
			}
			defer d.Close()
			var v string
			if err := d.Pool().QueryRow(context.Background(), `SHOW synchronous_commit`).Scan(&v); err != nil {
				t.Fatal(err)
			}
			if v != "on" {
				t.Fatalf("synchronous_commit = %s", v)
			}
		})
	}
}
