package redistest

import (
	"net"
	"sync"
	"testing"
	"time"
)

// Proxy forwards TCP connections to a node and can slow or cut the link, as
// a bad network would, without touching the server.
type Proxy struct {
	ln     net.Listener
	target string
	closed chan struct{}
	wg     sync.WaitGroup

	mu     sync.Mutex
	delay  time.Duration         // added before each forwarded chunk
	healed chan struct{}         // closed while the link is up; open while it is cut
	conns  map[net.Conn]struct{} // both ends of every proxied connection
}

// Proxy starts a proxy in front of n on a loopback port, closed when t ends.
func (n *Node) Proxy(t testing.TB) *Proxy {
	t.Helper()
	p, err := NewProxy(n.Addr())
	if err != nil {
		t.Fatalf("redistest: proxy: %v", err)
	}
	t.Cleanup(func() { _ = p.Close() })
	return p
}

// NewProxy starts a proxy to target; the caller must Close it.
func NewProxy(target string) (*Proxy, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	healed := make(chan struct{})
	close(healed)
	p := &Proxy{ln: ln, target: target, closed: make(chan struct{}), healed: healed, conns: map[net.Conn]struct{}{}}
	p.wg.Go(p.accept)
	return p, nil
}

// Addr is where clients connect instead of the node.
func (p *Proxy) Addr() string { return p.ln.Addr().String() }

// Delay makes every chunk of bytes wait d before it is forwarded, in both
// directions; 0 removes the delay.
func (p *Proxy) Delay(d time.Duration) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.delay = d
}

// Cut stops forwarding: connections stay open, as in a partition, and what
// is sent is held until Heal.
func (p *Proxy) Cut() {
	p.mu.Lock()
	defer p.mu.Unlock()
	select {
	case <-p.healed:
		p.healed = make(chan struct{})
	default:
	}
}

// Heal forwards again, held bytes first.
func (p *Proxy) Heal() {
	p.mu.Lock()
	defer p.mu.Unlock()
	select {
	case <-p.healed:
	default:
		close(p.healed)
	}
}

// Reset closes every proxied connection, as a crashed link would; new
// connections are accepted as before.
func (p *Proxy) Reset() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for c := range p.conns {
		c.Close()
	}
}

// Close stops the proxy and every connection through it.
func (p *Proxy) Close() error {
	select {
	case <-p.closed:
		return nil
	default:
	}
	close(p.closed)
	err := p.ln.Close()
	p.Reset()
	p.wg.Wait()
	return err
}

func (p *Proxy) accept() {
	for {
		client, err := p.ln.Accept()
		if err != nil {
			return
		}
		server, err := net.Dial("tcp", p.target)
		if err != nil {
			client.Close()
			continue
		}
		if !p.track(client, server) {
			return
		}
		p.wg.Go(func() { p.pipe(client, server) })
		p.wg.Go(func() { p.pipe(server, client) })
	}
}

// track records a new connection pair; false once the proxy is closed.
func (p *Proxy) track(conns ...net.Conn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	select {
	case <-p.closed:
		for _, c := range conns {
			c.Close()
		}
		return false
	default:
	}
	for _, c := range conns {
		p.conns[c] = struct{}{}
	}
	return true
}

// pipe copies src to dst through the link's current state, and closes both
// when either side ends.
func (p *Proxy) pipe(src, dst net.Conn) {
	defer p.drop(src, dst)
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 {
			if !p.gate() {
				return
			}
			if _, werr := dst.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			return // EOF or a reset: either way the pair is done
		}
	}
}

// gate waits while the link is cut, then for the delay; false when the
// proxy closed meanwhile.
func (p *Proxy) gate() bool {
	p.mu.Lock()
	healed, delay := p.healed, p.delay
	p.mu.Unlock()
	select {
	case <-healed:
	case <-p.closed:
		return false
	}
	if delay <= 0 {
		return true
	}
	timer := time.NewTimer(delay)
	defer timer.Stop()
	select {
	case <-timer.C:
		return true
	case <-p.closed:
		return false
	}
}

func (p *Proxy) drop(conns ...net.Conn) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, c := range conns {
		c.Close()
		delete(p.conns, c)
	}
}
