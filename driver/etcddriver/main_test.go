package etcddriver_test

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/fenced/fenced/internal/test/testetcd"
)

// cluster is the real three-member cluster every test of the package uses,
// each under a prefix of its own.
var cluster *testetcd.Cluster

func TestMain(m *testing.M) {
	testetcd.MaybeRunMember() // a member of pause_test.go's cluster runs here
	dir, err := os.MkdirTemp("", "fenced-etcd-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	cluster, err = testetcd.Start(dir, 3)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.RemoveAll(dir)
		os.Exit(1)
	}
	code := m.Run()
	cluster.Close()
	os.RemoveAll(dir)
	os.Exit(code)
}

// rawClient is a plain etcd client on the cluster, for what the tests
// check or change behind the driver's back.
func rawClient(t testing.TB) *clientv3.Client {
	t.Helper()
	cli, err := clientv3.New(clientv3.Config{Endpoints: cluster.Endpoints(), DialTimeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cli.Close() })
	return cli
}

func ctx(t testing.TB) context.Context {
	c, cancel := context.WithTimeout(context.Background(), time.Minute)
	t.Cleanup(cancel)
	return c
}
