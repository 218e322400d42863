package server

import (
	"net"
	"net/http"
	"net/netip"
	"strings"
)

// forwarded is r as the proxy in front of the server says it came, when
// Config.BehindTLSProxy: its RemoteAddr is the client address the proxy
// appended last to X-Forwarded-For (the entries before it are the
// client's own to write, and are ignored). Without a valid address there
// r is unchanged. The loopback rule of a server without tokens, the
// token throttle and the logs all see this address.
func (s *Server) forwarded(r *http.Request) *http.Request {
	if !s.cfg.BehindTLSProxy {
		return r
	}
	ip, ok := lastForwardedFor(r.Header.Values("X-Forwarded-For"))
	if !ok {
		return r
	}
	fw := *r
	fw.RemoteAddr = net.JoinHostPort(ip.String(), "0")
	return &fw
}

// lastForwardedFor is the last address of X-Forwarded-For headers (each a
// comma-separated list; an entry may carry a port).
func lastForwardedFor(values []string) (netip.Addr, bool) {
	if len(values) == 0 {
		return netip.Addr{}, false
	}
	list := values[len(values)-1]
	last := strings.TrimSpace(list[strings.LastIndexByte(list, ',')+1:])
	if ap, err := netip.ParseAddrPort(last); err == nil {
		return ap.Addr().Unmap(), true
	}
	ip, err := netip.ParseAddr(strings.Trim(last, "[]"))
	if err != nil || ip.Zone() != "" {
		return netip.Addr{}, false
	}
	return ip.Unmap(), true
}

// RequestSecure reports whether r reached the server over TLS: its own
// listener's, or, behind a TLS proxy (Config.BehindTLSProxy), the
// proxy's, unless the proxy says it took the request as plain HTTP
// (X-Forwarded-Proto: http). The dashboard's session cookie is Secure
// then.
func (s *Server) RequestSecure(r *http.Request) bool {
	if r.TLS != nil {
		return true
	}
	return s.cfg.BehindTLSProxy && !strings.EqualFold(strings.TrimSpace(r.Header.Get("X-Forwarded-Proto")), "http")
}
