package chaos

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"syscall"
	"time"
)

// proc is one worker process.
type proc struct {
	name   string
	cmd    *exec.Cmd
	exited chan struct{}
	paused bool // stopped by the nemesis, to be resumed
	killed bool // sent SIGKILL by the nemesis: its death by that signal is expected
	forced bool // killed after it outlived the graceful stop's grace period
}

// start starts the worker process of slot i, a new incarnation.
func (r *run) start(slot int) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.stopping {
		return nil
	}
	r.spawned++
	inc := r.spawned
	name := fmt.Sprintf("w%d.%d", slot, inc)
	url, err := r.b.workerURL(r.url, r.id, name)
	if err != nil {
		return err
	}
	rng := rand.New(rand.NewPCG(r.o.Seed, uint64(inc)))
	a := workerArgs{url: url, proc: name, history: r.historyPath(name), queue: queue,
		jobTTL: r.o.JobTTL, concurrency: r.o.Concurrency, leases: r.o.Leases, leaseTTL: r.o.LeaseTTL,
		seed: rng.Uint64()}
	offset := time.Duration(0)
	if r.o.ClockSkew > 0 {
		offset = time.Duration(rng.Int64N(int64(2*r.o.ClockSkew))) - r.o.ClockSkew
	}
	stderr, err := os.Create(r.stderrPath(name))
	if err != nil {
		return err
	}
	cmd := exec.Command(r.o.Exe, append(append([]string{}, r.o.ExeArgs...), a.flags()...)...)
	cmd.Env = append(os.Environ(), ClockOffsetEnv+"="+offset.String())
	cmd.Stdout, cmd.Stderr = stderr, stderr
	cmd.SysProcAttr = workerProcAttr()
	if err := cmd.Start(); err != nil {
		stderr.Close()
		return fmt.Errorf("start worker %s: %w", name, err)
	}
	p := &proc{name: name, cmd: cmd, exited: make(chan struct{})}
	for len(r.workers) <= slot {
		r.workers = append(r.workers, nil)
	}
	r.workers[slot] = p
	go func() {
		err := cmd.Wait()
		stderr.Close()
		close(p.exited)
		r.exitedOnItsOwn(slot, p, err)
	}()
	return nil
}

// exitedOnItsOwn records a worker whose exit was not the nemesis's SIGKILL
// nor a clean graceful stop, as a crash; during the run it starts a
// replacement.
func (r *run) exitedOnItsOwn(slot int, p *proc, err error) {
	ws, _ := p.cmd.ProcessState.Sys().(syscall.WaitStatus)
	r.mu.Lock()
	stopping := r.stopping
	expected := p.killed && ws.Signaled() && ws.Signal() == syscall.SIGKILL || stopping && (err == nil || p.forced)
	r.mu.Unlock()
	if expected {
		return
	}
	msg, _ := os.ReadFile(r.stderrPath(p.name))
	r.mu.Lock()
	r.crashes = append(r.crashes, fmt.Sprintf("%s: %v: %s", p.name, err, tail(string(msg), 500)))
	r.mu.Unlock()
	r.logf("worker %s exited on its own: %v", p.name, err)
	if !stopping {
		if err := r.start(slot); err != nil {
			r.logf("restart worker: %v", err)
		}
	}
}

func tail(s string, n int) string {
	if len(s) > n {
		return "…" + s[len(s)-n:]
	}
	return s
}

// alive lists the slots whose process runs (paused or not when
// withPaused).
func (r *run) alive(withPaused bool) []int {
	var out []int
	for i, p := range r.workers {
		if p == nil || p.killed {
			continue
		}
		select {
		case <-p.exited:
			continue
		default:
		}
		if p.paused && !withPaused {
			continue
		}
		out = append(out, i)
	}
	return out
}

// pause stops a running worker for d, then resumes it.
func (r *run) pause(pick int, d time.Duration) error {
	r.mu.Lock()
	slots := r.alive(false)
	if len(slots) <= r.o.Workers/2 {
		// Keep Workers/2 (rounded down) or more running: a paused worker's
		// job must be taken over, by someone, while the worker still
		// believes it holds it.
		r.mu.Unlock()
		return errors.New("half the workers are paused already")
	}
	p := r.workers[slots[pick%len(slots)]]
	if err := p.cmd.Process.Signal(syscall.SIGSTOP); err != nil {
		r.mu.Unlock()
		return err
	}
	p.paused = true
	r.mu.Unlock()
	r.logf("nemesis: SIGSTOP %s for %s", p.name, d.Round(time.Millisecond))
	go func() {
		select {
		case <-time.After(d):
		case <-p.exited:
		}
		r.resume(p)
	}()
	return nil
}

// resume sends SIGCONT to p if it is paused.
func (r *run) resume(p *proc) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if p.paused {
		p.paused = false
		p.cmd.Process.Signal(syscall.SIGCONT)
	}
}

// resumeAll resumes every paused worker.
func (r *run) resumeAll() {
	r.mu.Lock()
	ps := append([]*proc{}, r.workers...)
	r.mu.Unlock()
	for _, p := range ps {
		if p != nil {
			r.resume(p)
		}
	}
}

// kill SIGKILLs a worker (paused or not) and starts its replacement.
func (r *run) kill(pick int) error {
	r.mu.Lock()
	slots := r.alive(true)
	if len(slots) == 0 {
		r.mu.Unlock()
		return errors.New("no worker to kill")
	}
	slot := slots[pick%len(slots)]
	p := r.workers[slot]
	err := p.cmd.Process.Signal(syscall.SIGKILL)
	if err == nil {
		p.killed = true
	}
	r.mu.Unlock()
	if err != nil {
		return err
	}
	<-p.exited
	r.logf("nemesis: SIGKILL %s", p.name)
	return r.start(slot)
}

// stopAll stops every worker gracefully (SIGTERM), then kills what is left
// after a grace period.
func (r *run) stopAll() {
	r.mu.Lock()
	r.stopping = true
	ps := append([]*proc{}, r.workers...)
	r.mu.Unlock()
	r.resumeAll()
	for _, p := range ps {
		if p != nil {
			p.cmd.Process.Signal(syscall.SIGTERM)
		}
	}
	grace, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	for _, p := range ps {
		if p == nil {
			continue
		}
		select {
		case <-p.exited:
		case <-grace.Done():
			r.mu.Lock()
			p.forced = true
			r.mu.Unlock()
			p.cmd.Process.Kill()
			<-p.exited
		}
	}
}
