package etcddriver

import (
	"net"
	"strings"

	"github.com/fenced/fenced/fencedtype"
)

// URL is a parsed etcd:// database URL.
type URL struct {
	Endpoints []string // http://host:port, one per member
	Prefix    string   // "/prefix/": every key the driver writes starts with it
}

// ParseURL parses etcd://host:port[,host:port…][/prefix]. The members are
// reached over plain HTTP/2 (no TLS, no authentication: a cluster that
// needs them is not supported yet). The prefix is the URL's path, "fenced"
// when it has none.
func ParseURL(raw string) (URL, error) {
	scheme, rest, ok := strings.Cut(raw, "://")
	if !ok || !strings.EqualFold(scheme, "etcd") {
		return URL{}, fencedtype.Invalid("database url", "want etcd://host:port[,host:port…][/prefix]")
	}
	if strings.ContainsAny(rest, "?#@") {
		return URL{}, fencedtype.Invalid("database url", "etcd URLs take no user, query or fragment: want etcd://host:port[,host:port…][/prefix]")
	}
	hosts, path, _ := strings.Cut(rest, "/")
	var u URL
	for h := range strings.SplitSeq(hosts, ",") {
		if _, port, err := net.SplitHostPort(h); err != nil || port == "" {
			return URL{}, fencedtype.Invalid("database url", "etcd member %q is not host:port", h)
		}
		u.Endpoints = append(u.Endpoints, "http://"+h)
	}
	u.Prefix = normPrefix(path)
	return u, nil
}

// normPrefix makes "/p/" of "p", "/p", "p/" and "/p/"; "/fenced/" of "".
func normPrefix(p string) string {
	p = strings.Trim(p, "/")
	if p == "" {
		p = "fenced"
	}
	return "/" + p + "/"
}
