package demo

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/fenced/fenced"
	"github.com/fenced/fenced/internal/lib/display"
)

// created is what a run made in the database: its leases, the resources
// written under them, its queues (with their jobs and attempts) and its own
// tables. Every name is the run's own (a nanosecond timestamp in it), so
// removing them touches nothing else in a database the demo shares.
type created struct {
	mu        sync.Mutex
	leases    []string
	resources []string
	queues    []string
	tables    []string
}

// queue names a queue of this run only, so scenarios sharing a database
// never claim each other's jobs, and records it.
func (e *env) queue(scenario string) string {
	q := fmt.Sprintf("demo-%s-%d", scenario, time.Now().UnixNano())
	e.made.add(&e.made.queues, q)
	return q
}

// lease names a lease of this run only, and records it with the keys of
// the resources written under it.
func (e *env) lease(prefix string, resources ...string) string {
	name := fmt.Sprintf("%s-%d", prefix, time.Now().UnixNano())
	e.made.add(&e.made.leases, name)
	for _, r := range resources {
		e.made.add(&e.made.resources, name+r)
	}
	return name
}

// table names a table of this run only, and records it.
func (e *env) table(base string) string {
	name := base + "_" + strconv.FormatInt(time.Now().UnixNano(), 36)
	e.made.add(&e.made.tables, name)
	return name
}

func (m *created) add(list *[]string, name string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	*list = append(*list, name)
}

// cleanup removes what the run created and says what it removed. It runs
// even when ctx was cancelled (an interrupted demo cleans up too), within
// a time limit of its own.
func (e *env) cleanup(ctx context.Context) (string, error) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	defer cancel()
	m := &e.made
	m.mu.Lock()
	defer m.mu.Unlock()
	key := "key"
	if e.dialect == fenced.DialectMySQL {
		key = "`key`" // a reserved word there
	}
	var jobs int64
	steps := []struct {
		query string
		names []string
		count *int64
	}{
		// Attempts go with their jobs (ON DELETE CASCADE).
		{`DELETE FROM fenced_jobs WHERE queue = $1`, m.queues, &jobs},
		{`DELETE FROM fenced_leases WHERE name = $1`, m.leases, nil},
		{`DELETE FROM fenced_resource_ops WHERE ` + key + ` = $1`, m.resources, nil},
		{`DELETE FROM fenced_resources WHERE ` + key + ` = $1`, m.resources, nil},
	}
	for _, s := range steps {
		for _, n := range s.names {
			k, err := execSQL(ctx, e.d, s.query, n)
			if err != nil {
				return "", fmt.Errorf("demo: clean up %s: %w", n, err)
			}
			if s.count != nil {
				*s.count += k
			}
		}
	}
	for _, t := range m.tables {
		if _, err := execSQL(ctx, e.d, `DROP TABLE IF EXISTS `+t); err != nil {
			return "", fmt.Errorf("demo: drop table %s: %w", t, err)
		}
	}
	return fmt.Sprintf("removed what the demo created: %s (--keep keeps them)", m.counts(jobs)), nil
}

// kept says what a run with Keep left in the database, by name: a line
// for each kind, the names wrapped to fit Width.
func (e *env) kept() []string {
	m := &e.made
	m.mu.Lock()
	defer m.mu.Unlock()
	out := []string{"kept (--keep):"}
	for _, l := range []struct {
		what  string
		names []string
	}{{"leases", m.leases}, {"resources", m.resources}, {"queues", m.queues}, {"tables", m.tables}} {
		if len(l.names) == 0 {
			continue
		}
		for i, line := range display.Wrap(strings.Join(l.names, ", "), Width-13) {
			label := ""
			if i == 0 {
				label = l.what
			}
			out = append(out, fmt.Sprintf("  %-11s%s", label, line))
		}
	}
	if len(out) == 1 {
		out[0] += " nothing was created"
	}
	return out
}

// counts is how many things of each kind the run made.
func (m *created) counts(jobs int64) string {
	plural := func(n int, one, many string) string {
		if n == 1 {
			return "1 " + one
		}
		return fmt.Sprintf("%d %s", n, many)
	}
	return strings.Join([]string{
		fmt.Sprintf("%s in %s", plural(int(jobs), "job", "jobs"), plural(len(m.queues), "demo-* queue", "demo-* queues")),
		plural(len(m.leases), "lease", "leases"),
		plural(len(m.resources), "resource", "resources"),
		plural(len(m.tables), "table", "tables"),
	}, ", ")
}
