package testetcd

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"syscall"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/server/v3/embed"
	"go.uber.org/zap"
)

// memberEnv names the environment variable that makes the test binary run
// one member instead of its tests: MaybeRunMember reads it.
const memberEnv = "FENCED_TESTETCD_MEMBER"

// memberSpec is what a member's process is told of itself, as JSON in
// memberEnv.
type memberSpec struct {
	Name           string `json:"name"`
	Dir            string `json:"dir"`
	Peer           string `json:"peer"`
	Client         string `json:"client"`
	InitialCluster string `json:"initial_cluster"`
	State          string `json:"state"`
}

// MaybeRunMember runs an etcd member and never returns when the process
// was started by StartProcesses; otherwise it returns at once. A package
// that calls StartProcesses calls it first in its TestMain.
func MaybeRunMember() {
	spec, ok := os.LookupEnv(memberEnv)
	if !ok {
		return
	}
	if err := runMember(spec); err != nil {
		fmt.Fprintf(os.Stderr, "testetcd member: %v\n", err)
		os.Exit(1)
	}
	os.Exit(0)
}

// runMember runs the member spec describes until it fails or the process
// is killed.
func runMember(spec string) error {
	var s memberSpec
	if err := json.Unmarshal([]byte(spec), &s); err != nil {
		return fmt.Errorf("%s: %w", memberEnv, err)
	}
	peer, err := url.Parse(s.Peer)
	if err != nil {
		return err
	}
	cli, err := url.Parse(s.Client)
	if err != nil {
		return err
	}
	m := &member{name: s.Name, dir: s.Dir, peer: *peer, cli: *cli, initialSet: s.InitialCluster}
	e, err := embed.StartEtcd(m.config(s.State))
	if err != nil {
		return fmt.Errorf("start etcd member %s: %w", m.name, err)
	}
	return fmt.Errorf("etcd member %s: %w", m.name, <-e.Err())
}

// ProcCluster is a running cluster whose members are processes of their
// own, children of the test process: a member can be paused (SIGSTOP), as
// a member of a real cluster can be frozen by its machine.
type ProcCluster struct {
	exe     string // the test binary, which runs a member when started again
	mu      sync.Mutex
	members []*procMember
}

type procMember struct {
	*member
	cmd    *exec.Cmd
	exited chan struct{} // closed when the process has ended
	cli    *clientv3.Client
	paused bool
	killed bool // by Kill, until Restart
}

// StartProcesses starts an n-member cluster, each member a child process
// running the test binary again (whose TestMain must call MaybeRunMember
// first), with its data under dir, and waits until every member serves.
// The children die with the test process.
func StartProcesses(dir string, n int) (*ProcCluster, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, err
	}
	members, err := newMembers(dir, n)
	if err != nil {
		return nil, err
	}
	c := &ProcCluster{exe: exe}
	for _, m := range members {
		pm, err := startProcess(exe, m, embed.ClusterStateFlagNew)
		if err != nil {
			c.Close()
			return nil, err
		}
		c.members = append(c.members, pm)
	}
	deadline := time.Now().Add(30 * time.Second)
	for _, m := range c.members {
		if err := m.waitServing(deadline); err != nil {
			c.Close()
			return nil, err
		}
	}
	return c, nil
}

// startProcess starts member m's process: state is
// embed.ClusterStateFlagNew for a cluster's first start, Existing for a
// member started again from its data directory.
func startProcess(exe string, m *member, state string) (*procMember, error) {
	spec, err := json.Marshal(memberSpec{Name: m.name, Dir: m.dir, Peer: m.peer.String(), Client: m.cli.String(),
		InitialCluster: m.initialSet, State: state})
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(filepath.Dir(m.dir), 0o700); err != nil {
		return nil, err
	}
	// The member's own log and whatever the process writes (a panic) go to
	// one file; both append.
	out, err := os.OpenFile(m.logFile(), os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
	if err != nil {
		return nil, err
	}
	defer out.Close()
	cmd := exec.Command(exe)
	cmd.Env = append(os.Environ(), memberEnv+"="+string(spec))
	cmd.Stdout, cmd.Stderr = out, out
	cmd.SysProcAttr = dieWithParent()
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start etcd member %s: %w", m.name, err)
	}
	pm := &procMember{member: m, cmd: cmd, exited: make(chan struct{})}
	go func() { _ = cmd.Wait(); close(pm.exited) }()
	pm.cli, err = clientv3.New(clientv3.Config{Endpoints: []string{m.cli.String()}, Logger: zap.NewNop()})
	if err != nil {
		pm.kill()
		return nil, err
	}
	return pm, nil
}

// waitServing polls the member's status until it answers with a leader.
func (m *procMember) waitServing(deadline time.Time) error {
	for {
		st, err := m.status(time.Second)
		if err == nil && st.Leader != 0 {
			return nil
		}
		select {
		case <-m.exited:
			return fmt.Errorf("etcd member %s exited: %s; its log ends:\n%s", m.name, m.cmd.ProcessState, m.logTail())
		default:
		}
		if time.Now().After(deadline) {
			if err == nil {
				err = errors.New("no leader")
			}
			return fmt.Errorf("etcd member %s not serving by its deadline: %v; its log ends:\n%s", m.name, err, m.logTail())
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func (m *procMember) status(timeout time.Duration) (*clientv3.StatusResponse, error) {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	return m.cli.Status(ctx, m.member.cli.String())
}

// logTail is the end of the member's log file.
func (m *procMember) logTail() string {
	b, err := os.ReadFile(m.logFile())
	if err != nil {
		return err.Error()
	}
	const max = 4000
	if len(b) > max {
		b = b[len(b)-max:]
		if i := bytes.IndexByte(b, '\n'); i >= 0 {
			b = b[i+1:]
		}
	}
	return string(b)
}

// kill ends the process with SIGKILL and waits for it.
func (m *procMember) kill() {
	_ = m.cmd.Process.Kill()
	<-m.exited
	if m.cli != nil {
		m.cli.Close()
		m.cli = nil
	}
}

// Endpoints are the members' client addresses, host:port.
func (c *ProcCluster) Endpoints() []string {
	var out []string
	for _, m := range c.members {
		out = append(out, m.member.cli.Host)
	}
	return out
}

// URL is an etcd:// database URL of every member with a prefix of its own
// ("t-" and random hex), so each caller sees an empty keyspace.
func (c *ProcCluster) URL() string { return prefixedURL(c.Endpoints()) }

// Leader is the index of the member that says it leads, -1 when none
// answers so. A paused member is not asked.
func (c *ProcCluster) Leader() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	for i, m := range c.members {
		if m.paused || m.killed {
			continue
		}
		if st, err := m.status(300 * time.Millisecond); err == nil && st.Header.MemberId == st.Leader {
			return i
		}
	}
	return -1
}

// Term is the highest raft term a member that answers reports (a paused or
// killed member is not asked), and the index of the member that leads in
// it, -1 when none says it does. A term begins with an election: a new term
// is a leader change, even to the member that led before.
func (c *ProcCluster) Term() (term uint64, leader int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	leader = -1
	for i, m := range c.members {
		if m.paused || m.killed {
			continue
		}
		st, err := m.status(300 * time.Millisecond)
		if err != nil || st.RaftTerm < term {
			continue
		}
		if st.RaftTerm > term {
			term, leader = st.RaftTerm, -1
		}
		if st.Header.MemberId == st.Leader {
			leader = i
		}
	}
	return term, leader
}

// MemberID is the raft member id member i reports for itself; 0 when it
// does not answer (paused or killed).
func (c *ProcCluster) MemberID(i int) uint64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	m := c.members[i]
	if m.paused || m.killed {
		return 0
	}
	st, err := m.status(time.Second)
	if err != nil {
		return 0
	}
	return st.Header.MemberId
}

// Kill ends member i's process with SIGKILL, as a crash would: it neither
// flushes nor closes anything, and its data directory stays as the kill
// left it, for Restart.
func (c *ProcCluster) Kill(i int) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	m := c.members[i]
	if m.killed {
		return fmt.Errorf("etcd member %s is killed already", m.name)
	}
	m.kill()
	m.killed, m.paused = true, false
	return nil
}

// Restart starts the killed members again, each from its data directory,
// on its own ports, as a member of the existing cluster, and waits until
// every one serves (members that need one another for a quorum start
// together).
func (c *ProcCluster) Restart(members ...int) error {
	c.mu.Lock()
	var started []*procMember
	var err error
	for _, i := range members {
		old := c.members[i]
		if !old.killed {
			err = fmt.Errorf("etcd member %s was not killed", old.name)
			break
		}
		var pm *procMember
		if pm, err = startProcess(c.exe, old.member, embed.ClusterStateFlagExisting); err != nil {
			break
		}
		c.members[i] = pm
		started = append(started, pm)
	}
	c.mu.Unlock()
	if err != nil {
		return err
	}
	deadline := time.Now().Add(time.Minute)
	for _, pm := range started {
		if err := pm.waitServing(deadline); err != nil {
			return err
		}
	}
	return nil
}

// Pause freezes member i (SIGSTOP): it neither answers nor notices time
// pass until Resume.
func (c *ProcCluster) Pause(i int) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	m := c.members[i]
	if err := m.cmd.Process.Signal(syscall.SIGSTOP); err != nil {
		return fmt.Errorf("pause etcd member %s: %w", m.name, err)
	}
	m.paused = true
	return nil
}

// Resume lets the paused member i run again (SIGCONT).
func (c *ProcCluster) Resume(i int) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	m := c.members[i]
	if err := m.cmd.Process.Signal(syscall.SIGCONT); err != nil {
		return fmt.Errorf("resume etcd member %s: %w", m.name, err)
	}
	m.paused = false
	return nil
}

// Close kills every member and waits for them to end (their data stays).
func (c *ProcCluster) Close() {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, m := range c.members {
		if !m.killed {
			m.kill()
		}
	}
}
