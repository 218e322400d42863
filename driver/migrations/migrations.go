// Package migrations loads the versioned schema files each backend embeds.
// A file is named NNNN_name.sql; versions start at 1 and have no gaps.
package migrations

import (
	"fmt"
	"io/fs"
	"slices"
	"sort"
	"strconv"
	"strings"
)

// Migration is one versioned schema change.
type Migration struct {
	Version int
	Name    string
	SQL     string
}

// Load reads every NNNN_name.sql file in dir of fsys, ordered by version.
func Load(fsys fs.FS, dir string) ([]Migration, error) {
	entries, err := fs.ReadDir(fsys, dir)
	if err != nil {
		return nil, err
	}
	var out []Migration
	for _, e := range entries {
		file := e.Name()
		base, ok := strings.CutSuffix(file, ".sql")
		num, name, found := strings.Cut(base, "_")
		if !ok || !found {
			return nil, fmt.Errorf("migration file %q: want NNNN_name.sql", file)
		}
		v, err := strconv.Atoi(num)
		if err != nil {
			return nil, fmt.Errorf("migration file %q: %w", file, err)
		}
		sql, err := fs.ReadFile(fsys, dir+"/"+file)
		if err != nil {
			return nil, err
		}
		out = append(out, Migration{Version: v, Name: name, SQL: string(sql)})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Version < out[j].Version })
	for i, m := range out {
		if m.Version != i+1 {
			return nil, fmt.Errorf("migrations in %s: version %d where %d was expected", dir, m.Version, i+1)
		}
	}
	return out, nil
}

// Apply runs each migration of pending, in order, through exec, then
// records it with record, a statement whose two parameters are its version
// and name. It returns the versions applied, before a failure too.
func Apply(pending []Migration, record string, exec func(query string, args ...any) error) ([]int, error) {
	var applied []int
	for _, m := range pending {
		if err := exec(m.SQL); err != nil {
			return applied, fmt.Errorf("migration %d %s: %w", m.Version, m.Name, err)
		}
		if err := exec(record, m.Version, m.Name); err != nil {
			return applied, err
		}
		applied = append(applied, m.Version)
	}
	return applied, nil
}

// PendingVersions returns the versions of the migrations in dir of fsys
// that applied does not list, in order.
func PendingVersions(fsys fs.FS, dir string, applied []int) ([]int, error) {
	all, err := Load(fsys, dir)
	if err != nil {
		return nil, err
	}
	return Versions(Pending(all, applied)), nil
}

// Versions lists the versions of ms, in their order.
func Versions(ms []Migration) []int {
	out := make([]int, len(ms))
	for i, m := range ms {
		out[i] = m.Version
	}
	return out
}

// Pending returns the migrations of all whose versions applied does not
// list, in version order.
func Pending(all []Migration, applied []int) []Migration {
	var out []Migration
	for _, m := range all {
		if !slices.Contains(applied, m.Version) {
			out = append(out, m)
		}
	}
	return out
}
