// Package wire holds the JSON shapes the command's --json output and the
// HTTP service share where they differ from the values' own JSON form
// (package fencedtype declares leases, jobs and attempts with their JSON
// names): a resource's value as text, an enqueue's "existing" flag, a job
// with its history, counts pivoted by queue.
//
// Times are in fencedtype.TimeLayout, RFC 3339 in UTC with exactly six
// fractional digits (microseconds), like the values' own: the times these
// shapes and the HTTP service's replies add are of type Time, and a shape
// that embeds a value with its own MarshalJSON (Enqueued embeds a Job)
// encodes through Merge, since the embedded method would otherwise encode
// the value alone. Stored JSON (job args, output, progress) is passed
// through as it is; absent optional values are null.
package wire
