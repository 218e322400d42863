// Package fencedtype declares, once, the values and errors that fenced hands
// out and takes back: leases, resources, jobs and their attempts, and the
// typed errors of a refused call. The API (package fenced, which re-exports
// each under the same name), the backend drivers and the HTTP service all
// use these types; it imports nothing of fenced, so a driver outside this
// module can depend on it alone.
//
// The JSON form of each value is the one the HTTP service and the command's
// --json output send: times in RFC 3339 with the database's precision,
// stored JSON (job args, output, progress) as it is, null when absent.
package fencedtype
