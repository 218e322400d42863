package driver

import (
	"context"
	"slices"
	"strings"
	"sync"
)

// Backends are linked into a program by importing their package, which
// registers the URL schemes it opens, as database/sql drivers and image
// decoders do. The root package's Open looks the scheme up here, so a
// program that imports only pgdriver links neither SQLite nor MySQL, and a
// backend outside this module plugs into Open (and the conformance suite)
// the same way the built-in ones do.

// Opener opens a backend from a database URL whose scheme it registered.
// It connects (or opens the file) but does not migrate.
type Opener func(ctx context.Context, url string) (Driver, error)

var (
	registryMu sync.RWMutex
	registry   = map[string]Opener{}
)

// Register makes open the backend for the given URL schemes (compared
// case-insensitively). It is meant to be called from a backend package's
// init; it panics when a scheme is registered twice or open is nil, as
// database/sql.Register does, since either is a programming error.
func Register(open Opener, schemes ...string) {
	if open == nil {
		panic("fenced/driver: Register of a nil Opener")
	}
	registryMu.Lock()
	defer registryMu.Unlock()
	for _, s := range schemes {
		s = strings.ToLower(s)
		if _, dup := registry[s]; dup {
			panic("fenced/driver: Register called twice for scheme " + s)
		}
		registry[s] = open
	}
}

// Lookup returns the Opener registered for scheme (case-insensitive).
func Lookup(scheme string) (Opener, bool) {
	registryMu.RLock()
	defer registryMu.RUnlock()
	open, ok := registry[strings.ToLower(scheme)]
	return open, ok
}

// Schemes lists the registered URL schemes, sorted.
func Schemes() []string {
	registryMu.RLock()
	defer registryMu.RUnlock()
	out := make([]string, 0, len(registry))
	for s := range registry {
		out = append(out, s)
	}
	slices.Sort(out)
	return out
}
