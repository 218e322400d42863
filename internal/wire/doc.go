// Package wire holds the one JSON form of each fenced value — lease,
// resource, job, attempt, queue counts — shared by the command's --json
// output and the HTTP service, so the two can never drift apart.
//
// Times are RFC 3339 in UTC with the database's precision. Stored JSON
// (job args, output, progress) is passed through as it is; absent optional
// values are null.
package wire
