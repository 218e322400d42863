package etcddriver_test

import (
	"context"
	"errors"
	"net"
	"strings"
	"testing"

	"github.com/fenced/fenced/driver/etcddriver"
	"github.com/fenced/fenced/fencedtype"
)

// closedPort is a local address nothing listens on.
func closedPort(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	return addr
}

// An Open of members that refuse connections fails as a ConnectError that
// names each member and why it could not be reached.
func TestOpenOfRefusingMembersNamesEachAndItsCause(t *testing.T) {
	t.Parallel()
	a, b := closedPort(t), closedPort(t)
	_, err := etcddriver.Open(context.Background(), "etcd://"+a+","+b)
	var ce *fencedtype.ConnectError
	if !errors.As(err, &ce) || ce.Backend != fencedtype.DialectEtcd {
		t.Fatalf("open = %v, want a ConnectError of etcd", err)
	}
	for _, want := range []string{"cannot connect to etcd at " + a + "," + b + ": no member accepted a connection",
		a + ": connection refused", b + ": connection refused"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("open = %q, want it to say %q", err, want)
		}
	}
}

// A member that accepts connections but never answers is given the dial
// timeout, and the error says what was tried within it.
func TestOpenOfASilentMemberSaysWhatWasTried(t *testing.T) {
	t.Parallel()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			defer c.Close() // held open, never answered
		}
	}()
	_, err = etcddriver.Open(context.Background(), "etcd://"+l.Addr().String()+"/p")
	var ce *fencedtype.ConnectError
	if !errors.As(err, &ce) {
		t.Fatalf("open = %v, want a ConnectError", err)
	}
	for _, want := range []string{"cannot connect to etcd at " + l.Addr().String() + ":",
		"no member answered a read of /p/floor within 5s", l.Addr().String() + ": accepted a connection"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("open = %q, want it to say %q", err, want)
		}
	}
}
