package etcddriver

import (
	"context"
	"errors"
	"time"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/fenced/fenced/fencedtype"
)

// retryFor bounds how long a request the cluster could not serve (no
// leader, a leader change, a member down) is made again.
const retryFor = 30 * time.Second

// errNotPrimary is the message of the server's lease.ErrNotPrimary: a
// member that believes it leads but cannot confirm it (it was paused or cut
// off while the others elected a new leader) refuses to renew an etcd lease
// with it, for the client to try another member. It has no rpctypes error
// and reaches the client as a gRPC status of code Unknown.
const errNotPrimary = "not a primary lessor"

// transient reports whether err says the cluster could not serve a request
// now, so that it may serve it again soon. A DeadlineExceeded status is one
// of those while the caller's context lives (retry stops once it ended): a
// member's own deadline ran out, as a renewal's forwarding to a busy leader
// can (seen in the conformance suite on a loaded machine, with the caller's
// minute far from over).
func transient(err error) bool {
	for _, e := range []error{rpctypes.ErrNoLeader, rpctypes.ErrLeaderChanged, rpctypes.ErrTimeout,
		rpctypes.ErrTimeoutDueToLeaderFail, rpctypes.ErrTimeoutDueToConnectionLost, rpctypes.ErrStopped} {
		if errors.Is(err, e) {
			return true
		}
	}
	s, _ := status.FromError(err)
	return s.Code() == codes.Unavailable || s.Code() == codes.DeadlineExceeded ||
		s.Code() == codes.Unknown && s.Message() == errNotPrimary
}

// retry calls f until it succeeds, fails for good, or ctx or retryFor ends.
// Only for what is safe to repeat: reads, granting an etcd lease (an
// unused one runs out by its TTL), renewing one, and a deciding Txn the
// cluster refused before proposing it. An *fencedtype.UnknownOutcomeError
// is final, whatever the error it wraps: the Txn may yet be applied (a
// leader deposed while frozen times out what it proposed), and made again
// it could be applied twice (a resource write's version bumped twice).
func retry(ctx context.Context, f func() error) error {
	end := time.Now().Add(retryFor)
	wait := 20 * time.Millisecond
	for {
		err := f()
		if err == nil || errors.Is(err, fencedtype.ErrUnknownOutcome) || !transient(err) || ctx.Err() != nil || time.Now().After(end) {
			return err
		}
		select {
		case <-ctx.Done():
			return err
		case <-time.After(wait):
		}
		wait = min(2*wait, 500*time.Millisecond)
	}
}

// readTxn runs a read-only Txn (its reads are of one revision), again while
// the cluster cannot serve it.
func (d *Driver) readTxn(ctx context.Context, ops ...clientv3.Op) (resp *clientv3.TxnResponse, err error) {
	err = retry(ctx, func() error {
		resp, err = d.cli.Txn(ctx).Then(ops...).Commit()
		return err
	})
	return resp, err
}

// get reads one key, again while the cluster cannot serve it.
func (d *Driver) get(ctx context.Context, key string) (resp *clientv3.GetResponse, err error) {
	err = retry(ctx, func() error {
		resp, err = d.cli.Get(ctx, key)
		return err
	})
	return resp, err
}

// keepAliveOnce renews an etcd lease, again while the cluster cannot serve it.
func (d *Driver) keepAliveOnce(ctx context.Context, id clientv3.LeaseID) error {
	return retry(ctx, func() error {
		_, err := d.cli.KeepAliveOnce(ctx, id)
		return err
	})
}

// writeTxn commits a deciding Txn. A member without a leader refuses it
// before anything is proposed, and it is made again; a put on an etcd lease
// that no longer exists fails the whole Txn, and is returned as it is; any
// other failure may have come after the cluster applied it, and is a
// *fencedtype.UnknownOutcomeError: neither success nor a refusal.
func (d *Driver) writeTxn(ctx context.Context, cmps []clientv3.Cmp, then []clientv3.Op, els ...clientv3.Op) (*clientv3.TxnResponse, error) {
	var resp *clientv3.TxnResponse
	err := retry(ctx, func() (err error) {
		resp, err = d.cli.Txn(ctx).If(cmps...).Then(then...).Else(els...).Commit()
		if err != nil && !errors.Is(err, rpctypes.ErrNoLeader) && !errors.Is(err, rpctypes.ErrLeaseNotFound) {
			return &fencedtype.UnknownOutcomeError{Err: err}
		}
		return err
	})
	return resp, err
}
