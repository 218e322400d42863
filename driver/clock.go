package driver

import (
	"context"
	"time"
)

// Clock is implemented by backends that can read the database clock in a
// statement of its own. It decides nothing: every expiry is judged inside
// the deciding statement. It is for reports such as the time the HTTP
// service stamps on answers whose statement returns no clock reading.
type Clock interface {
	// DatabaseTime reads the database clock (the one expiry is judged by) in one
	// statement.
	DatabaseTime(ctx context.Context) (time.Time, error)
}
