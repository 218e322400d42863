package testdb

import (
	"io"
	"net"
	"sync"
	"testing"
)

// Proxy is a TCP proxy in front of a database server, for tests of what a
// client does when the server goes away: it can refuse new connections and
// cut the open ones (as a dead primary does), and cut a connection right
// after the server answered (a reply lost after the statement ran).
type Proxy struct {
	t      testing.TB
	target string
	ln     net.Listener
	addr   string

	mu      sync.Mutex
	down    bool
	cutNext bool // cut the next connection that receives a reply
	conns   map[net.Conn]bool
}

// NewProxy listens on a loopback port and forwards to target (host:port)
// until the test ends.
func NewProxy(t testing.TB, target string) *Proxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &Proxy{t: t, target: target, ln: ln, addr: ln.Addr().String(), conns: map[net.Conn]bool{}}
	go p.serve()
	t.Cleanup(func() { ln.Close(); p.cutAll() })
	return p
}

// Addr is the proxy's host:port.
func (p *Proxy) Addr() string { return p.addr }

func (p *Proxy) serve() {
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		p.mu.Lock()
		down := p.down
		p.mu.Unlock()
		if down {
			c.Close()
			continue
		}
		go p.pipe(c)
	}
}

func (p *Proxy) pipe(client net.Conn) {
	server, err := net.Dial("tcp", p.target)
	if err != nil {
		client.Close()
		return
	}
	p.track(client, server)
	go func() {
		io.Copy(server, client)
		server.Close()
	}()
	buf := make([]byte, 32<<10)
	for {
		n, err := server.Read(buf)
		if n > 0 {
			p.mu.Lock()
			cut := p.cutNext
			p.cutNext = false
			p.mu.Unlock()
			if cut {
				break
			}
			if _, werr := client.Write(buf[:n]); werr != nil {
				break
			}
		}
		if err != nil {
			break
		}
	}
	client.Close()
	server.Close()
}

func (p *Proxy) track(cs ...net.Conn) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, c := range cs {
		p.conns[c] = true
	}
}

func (p *Proxy) cutAll() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for c := range p.conns {
		c.Close()
	}
	clear(p.conns)
}

// Down refuses new connections and cuts the open ones.
func (p *Proxy) Down() {
	p.mu.Lock()
	p.down = true
	p.mu.Unlock()
	p.cutAll()
}

// Up accepts connections again.
func (p *Proxy) Up() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.down = false
}

// CutNextReply makes the next answer the server sends on any connection
// the last thing that connection carries: the answer is dropped and the
// connection closed, so the client never learns what its statement did.
func (p *Proxy) CutNextReply() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.cutNext = true
}
