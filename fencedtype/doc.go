// Package fencedtype declares, once, the values and errors that fenced hands
// out and takes back: leases, resources, jobs and their attempts, and the
// typed errors of a refused call. The API (package fenced, which re-exports
// each under the same name), the backend drivers and the HTTP service all
// use these types; it imports nothing of fenced, so a driver outside this
// module can depend on it alone. Its error messages write the names a user
// gave as the command writes them (Quote).
//
// The JSON form of each value is the one the HTTP service and the command's
// --json output send: stored JSON (job args, output, progress) as it is,
// null when absent, and times in TimeLayout, RFC 3339 in UTC with exactly
// six fractional digits ("2026-11-29T12:04:05.123000Z"), the form fenced
// writes every time in, in its command's output and messages too
// (FormatTime). Lease, Job and JobAttempt have a MarshalJSON method for
// that, which encodes their fields by their tags with the times replaced;
// a struct that embeds one of them would take that method as its own and
// lose its other fields, so it needs a MarshalJSON of its own (see
// internal/lib/wire).
package fencedtype
