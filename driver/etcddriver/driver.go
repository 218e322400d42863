package etcddriver

import (
	"context"
	"fmt"
	"strings"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/fenced/fenced/driver"
	"github.com/fenced/fenced/fencedtype"
)

func init() { driver.Register(Open, "etcd") }

// Driver is the etcd backend: the core of the contract (driver.Driver,
// leader election included) and the fence floor (driver.FenceFloorReader,
// fence.go), and no other capability: no job queue, no semaphores, no
// clock read. It is safe for concurrent use.
type Driver struct {
	cli  *clientv3.Client
	keys keys
	own  bool // Close closes cli
}

var _ driver.Driver = (*Driver)(nil)

// Open connects to the cluster named by an etcd:// URL (see ParseURL) and
// checks that a member answers a read, within dialTimeout (5s) for the
// connections and as long again for the read, or less if ctx ends first.
// When no member can be reached it fails with a *fencedtype.ConnectError
// naming each member and its cause ("127.0.0.1:2379: connection refused"),
// at once when every member refuses; when members accept connections but
// none answers, the error says the read that was tried.
func Open(ctx context.Context, url string) (driver.Driver, error) {
	u, err := ParseURL(url)
	if err != nil {
		return nil, err
	}
	hosts := make([]string, len(u.Endpoints))
	for i, e := range u.Endpoints {
		hosts[i] = strings.TrimPrefix(e, "http://")
	}
	causes := probeMembers(ctx, hosts)
	if !anyAccepted(causes) {
		return nil, connectError(hosts, "no member accepted a connection", causes, nil)
	}
	cli, err := clientv3.New(clientv3.Config{Endpoints: u.Endpoints, DialTimeout: dialTimeout, Context: context.WithoutCancel(ctx), Logger: quietLogger()})
	if err != nil {
		return nil, connectError(hosts, "cannot make a client", causes, err)
	}
	d := &Driver{cli: cli, keys: keys{prefix: u.Prefix}, own: true}
	pctx, cancel := context.WithTimeout(ctx, dialTimeout)
	defer cancel()
	if _, err := cli.Get(pctx, d.keys.floor()); err != nil {
		cli.Close()
		tried := fmt.Sprintf("no member answered a read of %s within %s", d.keys.floor(), dialTimeout)
		switch c := driver.NetCause(err); c {
		case "timed out":
		case "":
			tried += ": " + err.Error()
		default:
			tried += ": " + c
		}
		return nil, connectError(hosts, tried, causes, err)
	}
	return d, nil
}

// New makes a driver on a client the caller owns (Close leaves it open),
// with every key under prefix ("/fenced/" when empty; a trailing slash is
// added).
func New(cli *clientv3.Client, prefix string) *Driver {
	return &Driver{cli: cli, keys: keys{prefix: normPrefix(prefix)}}
}

// Dialect implements driver.Driver: fencedtype.DialectEtcd.
func (d *Driver) Dialect() fencedtype.Dialect { return fencedtype.DialectEtcd }

// Migrate implements driver.Driver: etcd has no schema, nothing to apply.
func (d *Driver) Migrate(context.Context) ([]int, error) { return nil, nil }

// PendingMigrations implements driver.Driver: never any.
func (d *Driver) PendingMigrations(context.Context) ([]int, error) { return nil, nil }

// Close implements driver.Driver.
func (d *Driver) Close() error {
	if !d.own {
		return nil
	}
	return d.cli.Close()
}
