package driver

import (
	"context"
	"errors"
	"net"
	"syscall"
)

// NetCause says in a few words why a connection failed on the network:
// "connection refused", "no such host db.example", "timed out". It is ""
// when err is not a network failure (a server's refusal, a TLS error), for
// the backend to describe.
func NetCause(err error) string {
	var dns *net.DNSError
	var errno syscall.Errno
	var ne net.Error
	switch {
	case errors.As(err, &dns) && dns.IsNotFound:
		return "no such host " + dns.Name
	case errors.As(err, &dns) && dns.IsTimeout:
		return "looking up " + dns.Name + " timed out"
	case errors.As(err, &dns):
		return "cannot look up " + dns.Name + ": " + dns.Err
	case errors.Is(err, context.DeadlineExceeded), errors.As(err, &ne) && ne.Timeout():
		return "timed out"
	case errors.Is(err, context.Canceled):
		return "cancelled"
	case errors.As(err, &errno):
		return errno.Error() // connection refused, no route to host, no such file or directory (a socket)
	}
	return ""
}
