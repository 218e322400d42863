package etcddriver

import (
	"context"
	"errors"
	"testing"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/fenced/fenced/fencedtype"
)

// A refusal before anything was proposed is made again; an outcome already
// unknown is not, whatever transient error it wraps; a renewal refused by a
// deposed leader, or cut off by a member's own deadline, is made again.
func TestRetry(t *testing.T) {
	for _, c := range []struct {
		name  string
		err   error
		calls int
	}{
		{"NoLeader", rpctypes.ErrNoLeader, 3},
		{"NotPrimary", status.Error(codes.Unknown, errNotPrimary), 3},
		{"MemberDeadline", status.Error(codes.DeadlineExceeded, "context deadline exceeded"), 3},
		{"OtherUnknown", status.Error(codes.Unknown, "something else"), 1},
		{"UnknownOutcome", &fencedtype.UnknownOutcomeError{Err: rpctypes.ErrTimeoutDueToLeaderFail}, 1},
	} {
		t.Run(c.name, func(t *testing.T) {
			calls := 0
			err := retry(context.Background(), func() error {
				if calls++; calls < 3 {
					return c.err
				}
				return nil
			})
			if calls != c.calls {
				t.Errorf("%d calls, want %d", calls, c.calls)
			}
			if want := c.calls == 1; want != (err != nil) || want && !errors.Is(err, c.err) {
				t.Errorf("err %v after %d calls", err, calls)
			}
		})
	}
}
