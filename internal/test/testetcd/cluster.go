// Package testetcd runs a real etcd cluster for tests: embedded members
// (go.etcd.io/etcd/server/v3/embed) on loopback ports picked free at start,
// below the ephemeral range, their data in a temporary directory. Start runs
// them inside the test process; StartProcesses runs each in a process of its
// own, the test binary started again (see MaybeRunMember), so that a member
// can be paused. Nothing is downloaded.
package testetcd

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	mrand "math/rand/v2"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"go.etcd.io/etcd/server/v3/embed"
)

// Timing of the members: a 50 ms heartbeat and a 500 ms election timeout
// make the cluster's minimum lease TTL ceil(1.5 × 500 ms) = 1 s, the
// shortest TTL the etcd driver accepts.
const (
	TickMs     = 50
	ElectionMs = 500
)

// Cluster is a running cluster of embedded members.
type Cluster struct {
	dir     string
	mu      sync.Mutex
	members []*member
}

type member struct {
	name       string
	dir        string
	peer, cli  url.URL
	etcd       *embed.Etcd
	initialSet string
}

// Start starts an n-member cluster with its data under dir and waits until
// every member serves.
func Start(dir string, n int) (*Cluster, error) {
	members, err := newMembers(dir, n)
	if err != nil {
		return nil, err
	}
	c := &Cluster{dir: dir, members: members}
	errs := make(chan error, n)
	for _, m := range c.members {
		go func() { errs <- m.start(embed.ClusterStateFlagNew) }()
	}
	for range n {
		if err := <-errs; err != nil {
			c.Close()
			return nil, err
		}
	}
	return c, nil
}

// newMembers names n members, m0…, with their directories under dir and
// free loopback ports.
func newMembers(dir string, n int) ([]*member, error) {
	var members []*member
	var initial []string
	for i := range n {
		peer, err := freeURL()
		if err != nil {
			return nil, err
		}
		cli, err := freeURL()
		if err != nil {
			return nil, err
		}
		m := &member{name: fmt.Sprintf("m%d", i), dir: filepath.Join(dir, fmt.Sprintf("m%d", i)), peer: peer, cli: cli}
		members = append(members, m)
		initial = append(initial, m.name+"="+peer.String())
	}
	for _, m := range members {
		m.initialSet = strings.Join(initial, ",")
	}
	return members, nil
}

// freeURL is a loopback address on a port that is free now. The port is
// drawn at random below the kernel's ephemeral range, which a port the
// kernel hands out (as a listen on :0 does) lies in: between this check and
// the member's own listen, any outgoing connection of the busy test machine
// could take such a port, and the member then fails to start.
// A port is handed out once per process: two members, or a stopped member
// waiting to restart, never share one.
func freeURL() (url.URL, error) {
	handedOut.Lock()
	defer handedOut.Unlock()
	lo, hi := 20000, ephemeralLow()
	for i := 0; i < 200 && lo < hi; i++ {
		port := lo + mrand.IntN(hi-lo)
		if handedOut.ports[port] {
			continue
		}
		addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
		l, err := net.Listen("tcp", addr)
		if err != nil {
			continue // in use
		}
		l.Close()
		handedOut.ports[port] = true
		return url.URL{Scheme: "http", Host: addr}, nil
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return url.URL{}, err
	}
	defer l.Close()
	return url.URL{Scheme: "http", Host: l.Addr().String()}, nil
}

// handedOut are the ports freeURL gave in this process.
var handedOut = struct {
	sync.Mutex
	ports map[int]bool
}{ports: map[int]bool{}}

// ephemeralLow is the first port of Linux's ephemeral range
// (/proc/sys/net/ipv4/ip_local_port_range), or 32768, its default.
func ephemeralLow() int {
	n := 32768
	if b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range"); err == nil {
		_, _ = fmt.Sscan(string(b), &n) // n stays the default if it cannot be read
	}
	return n
}

// config is member m's configuration, the same in the test process and in
// a process of its own.
func (m *member) config(state string) *embed.Config {
	cfg := embed.NewConfig()
	cfg.Name, cfg.Dir = m.name, m.dir
	cfg.ListenPeerUrls, cfg.AdvertisePeerUrls = []url.URL{m.peer}, []url.URL{m.peer}
	cfg.ListenClientUrls, cfg.AdvertiseClientUrls = []url.URL{m.cli}, []url.URL{m.cli}
	cfg.InitialCluster, cfg.ClusterState, cfg.InitialClusterToken = m.initialSet, state, "fenced-test"
	cfg.TickMs, cfg.ElectionMs = TickMs, ElectionMs
	cfg.LogLevel, cfg.LogOutputs = "error", []string{m.logFile()}
	cfg.UnsafeNoFsync = true // a test cluster on a shared machine; raft still replicates every write
	return cfg
}

// logFile is where member m logs, next to its data directory.
func (m *member) logFile() string { return m.dir + ".log" }

func (m *member) start(state string) error {
	cfg := m.config(state)
	if err := os.MkdirAll(filepath.Dir(m.dir), 0o700); err != nil {
		return err
	}
	e, err := embed.StartEtcd(cfg)
	if err != nil {
		return fmt.Errorf("start etcd member %s: %w", m.name, err)
	}
	select {
	case <-e.Server.ReadyNotify():
	case err := <-e.Err():
		e.Close()
		return fmt.Errorf("etcd member %s: %w", m.name, err)
	case <-time.After(30 * time.Second):
		e.Close()
		return fmt.Errorf("etcd member %s not ready after 30s", m.name)
	}
	m.etcd = e
	return nil
}

// Endpoints are the members' client addresses, host:port.
func (c *Cluster) Endpoints() []string {
	var out []string
	for _, m := range c.members {
		out = append(out, m.cli.Host)
	}
	return out
}

// URL is an etcd:// database URL of every member with a prefix of its own
// ("t-" and random hex), so each caller sees an empty keyspace.
func (c *Cluster) URL() string { return prefixedURL(c.Endpoints()) }

// prefixedURL is an etcd:// URL of endpoints with a fresh random prefix.
func prefixedURL(endpoints []string) string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return "etcd://" + strings.Join(endpoints, ",") + "/t-" + hex.EncodeToString(b[:])
}

// Leader is the index of the member that leads now, -1 when none does.
func (c *Cluster) Leader() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	for i, m := range c.members {
		if m.etcd != nil && m.etcd.Server.Leader() == m.etcd.Server.MemberID() {
			return i
		}
	}
	return -1
}

// Stop stops member i (its data stays).
func (c *Cluster) Stop(i int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if m := c.members[i]; m.etcd != nil {
		m.etcd.Close()
		m.etcd = nil
	}
}

// Restart starts the stopped member i again from its data.
func (c *Cluster) Restart(i int) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	m := c.members[i]
	if m.etcd != nil {
		return nil
	}
	return m.start(embed.ClusterStateFlagExisting)
}

// Close stops every member.
func (c *Cluster) Close() {
	for i := range c.members {
		c.Stop(i)
	}
}
