package etcddriver

import (
	"context"
	"errors"
	"fmt"
	"strings"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/fenced/fenced/driver"
)

// ErrSQLNotSupported is what the SQL methods of an etcd *Tx return: etcd
// runs no SQL. It matches errors.ErrUnsupported.
var ErrSQLNotSupported = fmt.Errorf("etcd runs no SQL: in a fenced transaction on etcd use (*etcddriver.Tx).Put and Delete: %w", errors.ErrUnsupported)

// Tx is the handle LeaseTx gives fn on etcd (reach it with a type
// assertion: tx.(*etcddriver.Tx)). Put and Delete buffer writes to the
// caller's own keys; they commit in one etcd Txn iff the lease's held key
// still names the caller's owner and fence, so nothing commits under a
// superseded, released or expired generation. Reads made in fn are not
// part of that Txn. Exec, Query and QueryRow return ErrSQLNotSupported.
type Tx struct {
	prefix string
	ops    []clientv3.Op
	err    error
}

var _ driver.Tx = (*Tx)(nil)

// Put buffers a put of value under key. Keys under the driver's own prefix
// are refused (LeaseTx then returns the error without committing).
func (t *Tx) Put(key, value string) {
	if t.check(key) {
		t.ops = append(t.ops, clientv3.OpPut(key, value))
	}
}

// Delete buffers a deletion of key.
func (t *Tx) Delete(key string) {
	if t.check(key) {
		t.ops = append(t.ops, clientv3.OpDelete(key))
	}
}

func (t *Tx) check(key string) bool {
	if strings.HasPrefix(key, t.prefix) && t.err == nil {
		t.err = fmt.Errorf("key %q is under fenced's own prefix %q", key, t.prefix)
	}
	return t.err == nil
}

// Exec implements driver.Tx: ErrSQLNotSupported.
func (t *Tx) Exec(context.Context, string, ...any) (int64, error) { return 0, ErrSQLNotSupported }

// Query implements driver.Tx: ErrSQLNotSupported.
func (t *Tx) Query(context.Context, string, ...any) (driver.Rows, error) {
	return nil, ErrSQLNotSupported
}

// QueryRow implements driver.Tx: a row whose Scan returns ErrSQLNotSupported.
func (t *Tx) QueryRow(context.Context, string, ...any) driver.Row { return errRow{} }

type errRow struct{}

func (errRow) Scan(...any) error { return ErrSQLNotSupported }

// LeaseTx implements driver.Driver on etcd: fn is called only when ref is
// the held generation, and its buffered writes commit in one Txn that
// compares the held key's value with ref's owner and fence; a failed check
// before or at the commit is the diagnosed *StaleError (or ErrNotFound).
// etcd has no row lock, so a takeover does not wait for fn: it makes the
// commit stale instead.
func (d *Driver) LeaseTx(ctx context.Context, ref driver.LeaseRef, fn func(driver.Tx) error) error {
	s, err := d.readLease(ctx, ref.Name)
	if err != nil {
		return err
	}
	if !s.mine(ref) {
		return driver.DiagnoseLease(ref, s.lease())
	}
	tx := &Tx{prefix: d.keys.prefix}
	if err := fn(tx); err != nil {
		return err
	}
	if tx.err != nil {
		return tx.err
	}
	resp, err := d.writeTxn(ctx, []clientv3.Cmp{
		clientv3.Compare(clientv3.Value(d.keys.held(ref.Name)), "=", holderValue(ref.Owner, ref.Fence)),
	}, tx.ops)
	if err != nil {
		return fmt.Errorf("fenced transaction on lease %q: %w", ref.Name, err)
	}
	if !resp.Succeeded {
		return d.diagnose(ctx, ref)
	}
	return nil
}
