package demo

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"syscall"
	"time"

	"github.com/fenced/fenced"
)

// staleWriterTTL is worker A's lease: short, so the pause outlasts it.
const staleWriterTTL = time.Second

// staleWriter: worker A (a real process) acquires with a TTL and gets fence 1;
// B is refused while A holds; A is stopped with SIGSTOP past its TTL; B takes
// over with fence 2 and writes 8; A is continued and writes 5 with fence 1.
// The fenced store rejects A's write; a store that checks no token (writes at
// fence 0, which every write passes) lets the stale 5 win.
func staleWriter(ctx context.Context, e *env) []Step {
	name := e.lease("report", "/fenced", "/unfenced")
	fencedKey, unfencedKey := name+"/fenced", name+"/unfenced"
	var steps []Step
	add := func(who, action, expected, observed string) {
		steps = append(steps, Step{Who: who, Action: action, Expected: expected, Observed: observed})
	}

	a, err := startWorker(ctx, e, name, "A", staleWriterTTL)
	if err != nil {
		add("A", "start worker process, acquire "+name, "granted, fence 1", "error: "+err.Error())
		return steps
	}
	defer a.kill()
	// A new name's first fence is 1 (or one above the floor after a fence
	// advance); every later expectation is relative to it.
	f := a.fence
	steps = append(steps, Step{Who: "A", Action: fmt.Sprintf("acquire lease (ttl %s)", staleWriterTTL),
		Expected: "granted, a new fence", Observed: fmt.Sprintf("granted, fence %d", f), Match: func() bool { return f > 0 }})

	_, err = e.c.AcquireLease(ctx, name, "B", time.Minute)
	add("B", "acquire lease while A holds it", "refused: held by A", refusal(err))

	if err := a.cmd.Process.Signal(syscall.SIGSTOP); err != nil {
		add("A", "pause (SIGSTOP)", "stopped", "error: "+err.Error())
		return steps
	}
	add("A", "pause (SIGSTOP) — a GC pause, a VM freeze", "stopped", processState(a.cmd.Process.Pid, "stopped"))
	// A is stopped before it got its orders: it will act on them when it wakes.
	if err := a.send(fmt.Sprintf("write %s %s 5", fencedKey, unfencedKey)); err != nil {
		add("A", "queue its write of 5", "queued", "error: "+err.Error())
		return steps
	}
	add("—", "wait until the lease expires by the database clock", "expired", waitExpired(ctx, e.c, name))

	b, err := e.c.AcquireLease(ctx, name, "B", time.Minute)
	add("B", "acquire lease", fmt.Sprintf("granted, fence %d", f+1), granted(b, err))
	bFence := int64(0)
	if b != nil {
		bFence = b.Fence
	}
	w, err := e.c.WriteResource(ctx, fencedKey, []byte("8"), bFence, fenced.WriteOptions{})
	add("B", "write 8 to the fenced store with its fence", "accepted", accepted(w, err))
	w, err = e.c.WriteResource(ctx, unfencedKey, []byte("8"), 0, fenced.WriteOptions{})
	add("B", "write 8 to an unfenced store (no token checked)", "accepted", accepted(w, err))

	if err := a.cmd.Process.Signal(syscall.SIGCONT); err != nil {
		add("A", "wake (SIGCONT)", "running", "error: "+err.Error())
		return steps
	}
	add("A", fmt.Sprintf("wake (SIGCONT), still believing it holds fence %d", f), "running", processState(a.cmd.Process.Pid, "running"))
	fencedOut, unfencedOut := a.read(), a.read()
	add("A", fmt.Sprintf("write 5 to the fenced store with fence %d", f), fmt.Sprintf("rejected: stale (current fence %d)", f+1), fencedOut)
	add("A", "write 5 to the unfenced store", "accepted", unfencedOut)

	add("—", "read the fenced store", fmt.Sprintf("8 (fence %d)", f+1), readValue(ctx, e.c, fencedKey, true))
	add("—", "read the unfenced store: A's stale 5 won", "5", readValue(ctx, e.c, unfencedKey, false))
	if err := a.wait(); err != nil {
		add("A", "exit", "exited", "error: "+err.Error())
	}
	return steps
}

// processState reads a process's scheduler state from /proc, waiting up to
// half a second for it to become want (signals are delivered
// asynchronously): "stopped", "running" (any other live state) or "exited".
func processState(pid int, want string) string {
	state := "unknown"
	for range 100 {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		if err != nil {
			return "unknown (" + err.Error() + ")"
		}
		// the state letter follows the command name, which is in parentheses
		stat := string(b)
		i := strings.LastIndexByte(stat, ')')
		if i < 0 || i+2 >= len(stat) {
			return "unknown"
		}
		switch stat[i+2] {
		case 'T', 't':
			state = "stopped"
		case 'Z', 'X':
			state = "exited"
		default:
			state = "running"
		}
		if state == want {
			break
		}
		time.Sleep(5 * time.Millisecond)
	}
	return state
}

func refusal(err error) string {
	var held *fenced.HeldError
	if errors.As(err, &held) {
		return "refused: held by " + held.Owner
	}
	if err == nil {
		return "granted"
	}
	return "error: " + err.Error()
}

func granted(l *fenced.Lease, err error) string {
	if err != nil {
		return "error: " + err.Error()
	}
	return fmt.Sprintf("granted, fence %d", l.Fence)
}

func accepted(w *fenced.ResourceWrite, err error) string {
	if err != nil {
		return "error: " + err.Error()
	}
	return "accepted"
}

// waitExpired polls the database clock until name is no longer held.
func waitExpired(ctx context.Context, c *fenced.Client, name string) string {
	deadline := time.Now().Add(staleWriterTTL + 30*time.Second)
	for time.Now().Before(deadline) {
		l, err := c.GetLease(ctx, name)
		if err != nil {
			return "error: " + err.Error()
		}
		if !l.Held {
			return "expired"
		}
		time.Sleep(20 * time.Millisecond)
	}
	return "still held"
}

func readValue(ctx context.Context, c *fenced.Client, key string, withFence bool) string {
	r, err := c.ReadResource(ctx, key)
	if err != nil {
		return "error: " + err.Error()
	}
	if withFence {
		return fmt.Sprintf("%s (fence %d)", r.Value, r.Fence)
	}
	return string(r.Value)
}
