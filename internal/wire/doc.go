// Package wire holds the JSON shapes the command's --json output and the
// HTTP service share where they differ from the values' own JSON form
// (package fencedtype declares leases, jobs and attempts with their JSON
// names): a resource's value as text, an enqueue's "existing" flag, a job
// with its history, counts pivoted by queue.
//
// Times are RFC 3339 in UTC with the database's precision. Stored JSON
// (job args, output, progress) is passed through as it is; absent optional
// values are null.
package wire
