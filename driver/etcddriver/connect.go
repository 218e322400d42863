package etcddriver

import (
	"context"
	"fmt"
	"net"
	"strings"
	"sync"
	"time"

	"github.com/fenced/fenced/driver"
	"github.com/fenced/fenced/fencedtype"
)

// dialTimeout bounds Open: the connections to the members, then the first
// read, each.
const dialTimeout = 5 * time.Second

// probeMembers opens a TCP connection to each member at once, in parallel,
// within dialTimeout, and closes it: it returns, for each, "" when it
// accepted and otherwise why not. The etcd client retries a refused member
// quietly until its deadline and then reports only that it timed out; this
// learns at once that no member listens, and which cause each had.
func probeMembers(ctx context.Context, hosts []string) []string {
	ctx, cancel := context.WithTimeout(ctx, dialTimeout)
	defer cancel()
	causes := make([]string, len(hosts))
	var wg sync.WaitGroup
	for i, h := range hosts {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var d net.Dialer
			c, err := d.DialContext(ctx, "tcp", h)
			if err == nil {
				c.Close()
				return
			}
			if causes[i] = driver.NetCause(err); causes[i] == "" {
				causes[i] = err.Error()
			}
		}()
	}
	wg.Wait()
	return causes
}

// connectError is Open's error: what was tried, then each member and
// what it did ("accepted a connection" for one that did).
func connectError(hosts []string, tried string, causes []string, err error) error {
	each := make([]string, len(hosts))
	for i, h := range hosts {
		c := causes[i]
		if c == "" {
			c = "accepted a connection"
		}
		each[i] = h + ": " + c
	}
	return &fencedtype.ConnectError{Backend: fencedtype.DialectEtcd, Address: strings.Join(hosts, ","),
		Cause: fmt.Sprintf("%s (%s)", tried, strings.Join(each, "; ")), Err: err}
}

// anyAccepted reports whether a member accepted a connection.
func anyAccepted(causes []string) bool {
	for _, c := range causes {
		if c == "" {
			return true
		}
	}
	return false
}
