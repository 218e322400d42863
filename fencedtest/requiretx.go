package fencedtest

import (
	"context"
	"fmt"
	"strings"

	"github.com/fenced/fenced"
	"github.com/fenced/fenced/fencedtype"
)

// jobsOfKindSQL reads a kind's jobs, the fields a Match reads, in the
// caller's transaction; %s is the dialect's parameter.
const jobsOfKindSQL = `SELECT id, kind, queue, args, priority, state, attempt, max_attempts, metadata
FROM fenced_jobs WHERE kind = %s ORDER BY id`

// jobsInTx reads the jobs of kinds (sorted, distinct) inside tx, which
// sees its own uncommitted enqueues.
func jobsInTx(ctx context.Context, c *fenced.Client, tx fenced.Tx, kinds []string) ([]*fenced.Job, error) {
	param := "?"
	switch c.Driver().Dialect() {
	case fencedtype.DialectPostgres:
		param = "$1"
	case fencedtype.DialectSQLite, fencedtype.DialectMySQL:
	default:
		return nil, fmt.Errorf("fencedtest: jobs inside a transaction are read with SQL, which %s does not have", c.Driver().Dialect())
	}
	query := fmt.Sprintf(jobsOfKindSQL, param)
	var out []*fenced.Job
	for _, kind := range kinds {
		rows, err := tx.Query(ctx, query, kind)
		if err != nil {
			return nil, fmt.Errorf("fencedtest: read jobs of kind %q in the transaction: %w", kind, err)
		}
		for rows.Next() {
			j := new(fenced.Job)
			var state string
			var args, meta []byte
			if err := rows.Scan(&j.ID, &j.Kind, &j.Queue, &args, &j.Priority, &state, &j.Attempt, &j.MaxAttempts, &meta); err != nil {
				rows.Close()
				return nil, fmt.Errorf("fencedtest: read jobs of kind %q in the transaction: %w", kind, err)
			}
			// Copied: a driver may reuse the bytes for the next row.
			j.State, j.Args = fenced.JobState(strings.Clone(state)), append([]byte(nil), args...)
			if meta != nil {
				j.Metadata = append([]byte(nil), meta...)
			}
			out = append(out, j)
		}
		err = rows.Err()
		rows.Close()
		if err != nil {
			return nil, fmt.Errorf("fencedtest: read jobs of kind %q in the transaction: %w", kind, err)
		}
	}
	return out, nil
}
