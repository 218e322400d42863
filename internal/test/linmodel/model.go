// Package linmodel is the sequential specification of fenced's leases,
// fenced transactions and resource store (docs/design.md §4–§5) that recorded
// histories are checked against with porcupine: one lease, the counter its
// holders bump in fenced transactions, and the resource written under its
// fences. A history is partitioned by lease name, so each partition has
// exactly that state.
//
// Expiry is judged by the database clock, which the model cannot read. An
// operation that reports the database's decision time (Acquire, Renew, Get:
// Lease.DecidedAt) is judged exactly at that time, give or take Slack;
// every other operation may find the generation expired or not, whichever its
// outcome needs. Expiry is judged per operation and not carried forward,
// because under MVCC the order of commits and the order of clock readings can
// disagree (a renew decided before the expiry may commit after a read that
// saw it expire). Fences, owners, release, the counter and the resource are
// checked exactly.
//
// An outcome the client could not learn (its context ended mid-call, so the
// statement may or may not have committed) is Unknown: the operation
// either did nothing or did what it would have done, and it returns at
// +infinity, since it can take effect at any time after its call.
package linmodel

import (
	"fmt"
	"hash/fnv"

	"github.com/anishathalye/porcupine"

	"github.com/fenced/fenced"
)

// Kind names an operation of the recorded workload.
type Kind uint8

const (
	Acquire Kind = iota + 1 // Acquire(Name, Owner, ttl)
	Renew                   // Renew(Name, Owner, Fence)
	Release                 // Release(Name, Owner, Fence)
	Tx                      // LeaseTx(Name, Owner, Fence): counter := counter + 1
	Write                   // WriteResource(key of Name, Value, Fence)
	Read                    // ReadResource(key of Name)
	Get                     // Get(Name)
	Counter                 // read the counter the holders' Tx bump
)

var kindNames = map[Kind]string{Acquire: "acquire", Renew: "renew", Release: "release",
	Tx: "tx", Write: "write", Read: "read", Get: "get", Counter: "counter"}

func (k Kind) String() string { return kindNames[k] }

// Input is one call. Name is the lease name, and the partition.
type Input struct {
	Kind  Kind
	Name  string
	Owner string // acquire; the caller's generation for renew, release, tx
	Fence int64  // the caller's generation for renew, release, tx; the write's fence
	Value string // write
}

// Result classifies what a call returned.
type Result uint8

const (
	OK       Result = iota + 1
	Held            // *HeldError
	Stale           // *StaleError
	NotFound        // ErrNotFound
	Unknown         // ambiguous: the statement may or may not have committed
)

// Output is what a call returned. Times are database-clock microseconds.
type Output struct {
	Result Result
	// OK acquire, renew, get; held (the holder).
	Owner     string
	Fence     int64 // also OK write and read: the stored fence
	ExpiresAt int64
	DecidedAt int64 // 0: not reported
	Held      bool
	Released  bool
	// Stale.
	CurrentFence int64
	CurrentOwner string
	Reason       fenced.StaleReason
	// OK tx: the counter after the increment.
	Counter int64
	// OK write and read.
	Version int64
	Value   string
}

// State is one partition's state: the lease row, the counter and the
// resource. A zero Expires means the expiry is not known (granted or renewed
// by an ambiguous call, or cut short by release).
type State struct {
	Exists     bool
	Owner      string
	Fence      int64
	Released   bool
	Expires    int64
	Counter    int64
	ResExists  bool
	ResValue   string
	ResFence   int64
	ResVersion int64
}

// Slack is the uncertainty allowed between a reported decision time and
// the clock readings the deciding statement compared with the expiry.
const Slack = 1000 // µs

// Spec selects deliberately broken variants of the model, used to show
// that the checker notices when the specification and the system disagree.
type Spec struct {
	RenewIgnoresFence bool // renew succeeds for any unreleased, unexpired lease
	WriteIgnoresFence bool // a resource write is always accepted
	// Slack, in µs, replaces the package's Slack when positive: for a
	// backend whose expiry lags its reported expiry (etcd's lessor).
	Slack int64
}

func (spec Spec) slack() int64 {
	if spec.Slack > 0 {
		return spec.Slack
	}
	return Slack
}

// Model is the specification as a porcupine model.
func Model(spec Spec) porcupine.Model {
	nm := porcupine.NondeterministicModel{
		Partition: partition,
		Init:      func() []any { return []any{State{}} },
		Step: func(state, input, output any) []any {
			next := spec.step(state.(State), input.(Input), output.(Output))
			out := make([]any, len(next))
			for i, s := range next {
				out[i] = s
			}
			return out
		},
		Hash:              hash,
		DescribeOperation: Describe,
		DescribeState:     func(s any) string { return fmt.Sprintf("%+v", s) },
	}
	return nm.ToModel()
}

func partition(history []porcupine.Operation) [][]porcupine.Operation {
	byName := map[string]int{}
	var out [][]porcupine.Operation
	for _, op := range history {
		name := op.Input.(Input).Name
		i, ok := byName[name]
		if !ok {
			i = len(out)
			byName[name] = i
			out = append(out, nil)
		}
		out[i] = append(out[i], op)
	}
	return out
}

func hash(state any) uint64 {
	h := fnv.New64a()
	fmt.Fprintf(h, "%v", state)
	return h.Sum64()
}

func Describe(input, output any) string {
	in, out := input.(Input), output.(Output)
	call := fmt.Sprintf("%s(%s", in.Kind, in.Name)
	if in.Owner != "" {
		call += fmt.Sprintf(", %s", in.Owner)
	}
	if in.Fence != 0 {
		call += fmt.Sprintf(", fence %d", in.Fence)
	}
	if in.Value != "" {
		call += fmt.Sprintf(", %q", in.Value)
	}
	call += ")"
	switch out.Result {
	case OK:
		return call + " -> ok" + describeOK(in.Kind, out)
	case Held:
		return call + fmt.Sprintf(" -> held by %s fence %d", out.Owner, out.Fence)
	case Stale:
		return call + fmt.Sprintf(" -> stale (%s, current fence %d %q)", out.Reason, out.CurrentFence, out.CurrentOwner)
	case NotFound:
		return call + " -> not found"
	default:
		return call + " -> unknown"
	}
}

func describeOK(k Kind, out Output) string {
	switch k {
	case Acquire, Renew, Get:
		s := fmt.Sprintf(" %s fence %d expires %d (decided %d)", out.Owner, out.Fence, out.ExpiresAt, out.DecidedAt)
		if out.Released {
			s += " released"
		} else if !out.Held {
			s += " not held"
		}
		return s
	case Tx, Counter:
		return fmt.Sprintf(" counter %d", out.Counter)
	case Write:
		return fmt.Sprintf(" version %d", out.Version)
	case Read:
		return fmt.Sprintf(" %q fence %d version %d", out.Value, out.Fence, out.Version)
	}
	return ""
}

// step returns every state the system can be in after in returned out from
// s; none when it cannot.
func (spec Spec) step(s State, in Input, out Output) []State {
	switch in.Kind {
	case Acquire:
		return s.acquire(in, out, spec.slack())
	case Renew:
		return spec.renew(s, in, out)
	case Release:
		return s.release(in, out)
	case Tx:
		return s.tx(in, out)
	case Write:
		return spec.write(s, in, out)
	case Read:
		return s.read(out)
	case Get:
		return s.get(out, spec.slack())
	case Counter:
		return s.counter(out)
	}
	return nil
}

// expiry says whether the generation may be expired, and whether it may be
// unexpired, at database time at (0: unknown), give or take slack µs.
func (s State) expiry(at, slack int64) (mayExpired, mayLive bool) {
	switch {
	case s.Expires == 0 || at == 0:
		return true, true
	case at >= s.Expires+slack:
		return true, false
	case at < s.Expires-slack:
		return false, true
	}
	return true, true
}

// mine reports whether the caller's generation is the stored one.
func (s State) mine(in Input) bool {
	return s.Exists && s.Owner == in.Owner && s.Fence == in.Fence
}

// granted is s after a grant or extension to owner with fence.
func (s State) granted(owner string, fence, expires int64) State {
	s.Exists, s.Owner, s.Fence, s.Released, s.Expires = true, owner, fence, false, expires
	return s
}

func (s State) acquire(in Input, out Output, slack int64) []State {
	mayExpired, mayLive := s.expiry(out.DecidedAt, slack)
	free := !s.Exists || s.Released || mayExpired
	extend := s.Exists && !s.Released && mayLive && s.Owner == in.Owner
	switch out.Result {
	case OK:
		ok := out.Owner == in.Owner && out.Held && !out.Released &&
			(free && out.Fence == s.Fence+1 || extend && out.Fence == s.Fence)
		return when(ok, s.granted(in.Owner, out.Fence, out.ExpiresAt))
	case Held:
		// Refused: another owner holds it, unexpired (no decision time is
		// reported with the refusal, so any expiry fits).
		ok := s.Exists && !s.Released && s.Owner != in.Owner && out.Owner == s.Owner &&
			out.Fence == s.Fence && (s.Expires == 0 || out.ExpiresAt == s.Expires)
		s.Expires = out.ExpiresAt // the holder's expiry, learnt if it was unknown
		return when(ok, s)
	case Unknown:
		next := []State{s}
		if free {
			next = append(next, s.granted(in.Owner, s.Fence+1, 0))
		}
		if extend {
			next = append(next, s.granted(in.Owner, s.Fence, 0))
		}
		return next
	}
	return nil
}

func (spec Spec) renew(s State, in Input, out Output) []State {
	current := func(live bool) bool { return s.mine(in) && !s.Released && live }
	if spec.RenewIgnoresFence {
		current = func(live bool) bool { return s.Exists && !s.Released && live }
	}
	switch out.Result {
	case OK:
		_, mayLive := s.expiry(out.DecidedAt, spec.slack())
		ok := current(mayLive) && out.Owner == in.Owner && out.Fence == in.Fence && out.Held
		s.Expires = out.ExpiresAt
		return when(ok, s)
	case Stale:
		return when(s.staleLease(in, out, current), s)
	case NotFound:
		return when(!s.Exists, s)
	case Unknown:
		if current(true) {
			renewed := s
			renewed.Expires = 0
			return []State{s, renewed}
		}
		return []State{s}
	}
	return nil
}

func (s State) release(in Input, out Output) []State {
	released := s
	released.Released, released.Expires = true, 0
	switch out.Result {
	case OK:
		return when(s.mine(in), released)
	case Stale:
		return when(s.staleLease(in, out, func(bool) bool { return s.mine(in) }), s)
	case NotFound:
		return when(!s.Exists, s)
	case Unknown:
		if s.mine(in) {
			return []State{s, released}
		}
		return []State{s}
	}
	return nil
}

func (s State) tx(in Input, out Output) []State {
	current := func(live bool) bool { return s.mine(in) && !s.Released && live }
	bumped := s
	bumped.Counter++
	switch out.Result {
	case OK:
		return when(current(true) && out.Counter == bumped.Counter, bumped)
	case Stale:
		return when(s.staleLease(in, out, current), s)
	case NotFound:
		return when(!s.Exists, s)
	case Unknown:
		if current(true) {
			return []State{s, bumped}
		}
		return []State{s}
	}
	return nil
}

// staleLease reports whether out is a stale error s can produce for the
// caller's generation in, where current(live) says whether the call would
// have succeeded with the generation unexpired (live) or not. The error is
// diagnosed from the row: superseded when the stored fence is above the
// caller's, never granted when below it, wrong owner when the fence is the
// caller's but the owner is not, then released, then expired; the current
// owner is named only while the stored generation is held.
func (s State) staleLease(in Input, out Output, current func(live bool) bool) bool {
	if !s.Exists || out.Fence != in.Fence || out.CurrentFence != s.Fence {
		return false
	}
	reason := fenced.ReasonExpired
	switch {
	case in.Fence < s.Fence:
		reason = fenced.ReasonSuperseded
	case in.Fence > s.Fence:
		reason = fenced.ReasonNeverGranted
	case in.Owner != s.Owner:
		reason = fenced.ReasonWrongOwner
	case s.Released:
		reason = fenced.ReasonReleased
	}
	for _, live := range []bool{true, false} {
		held := live && !s.Released
		owner := ""
		if held {
			owner = s.Owner
		}
		if reason == fenced.ReasonExpired && live {
			continue // expired means not live
		}
		if !current(live) && out.Reason == reason && out.CurrentOwner == owner {
			return true
		}
	}
	return false
}

func (spec Spec) write(s State, in Input, out Output) []State {
	accept := !s.ResExists || in.Fence >= s.ResFence || spec.WriteIgnoresFence
	written := s
	written.ResExists, written.ResValue, written.ResFence, written.ResVersion = true, in.Value, in.Fence, s.ResVersion+1
	switch out.Result {
	case OK:
		return when(accept && out.Fence == in.Fence && out.Version == written.ResVersion, written)
	case Stale:
		ok := !accept && out.Fence == in.Fence && out.CurrentFence == s.ResFence &&
			out.Reason == fenced.ReasonSuperseded && out.CurrentOwner == ""
		return when(ok, s)
	case Unknown:
		if accept {
			return []State{s, written}
		}
		return []State{s}
	}
	return nil
}

func (s State) read(out Output) []State {
	switch out.Result {
	case OK:
		ok := s.ResExists && out.Value == s.ResValue && out.Fence == s.ResFence && out.Version == s.ResVersion
		return when(ok, s)
	case NotFound:
		return when(!s.ResExists, s)
	case Unknown: // a read changes nothing, whatever it returned
		return []State{s}
	}
	return nil
}

// counter reads the counter: it shows every Tx that committed.
func (s State) counter(out Output) []State {
	switch out.Result {
	case OK:
		return when(out.Counter == s.Counter, s)
	case Unknown:
		return []State{s}
	}
	return nil
}

func (s State) get(out Output, slack int64) []State {
	switch out.Result {
	case OK:
		mayExpired, mayLive := s.expiry(out.DecidedAt, slack)
		ok := s.Exists && out.Owner == s.Owner && out.Fence == s.Fence && out.Released == s.Released &&
			(s.Released || s.Expires == 0 || out.ExpiresAt == s.Expires) &&
			(out.Held && !s.Released && mayLive || !out.Held && (s.Released || mayExpired))
		if !s.Released {
			s.Expires = out.ExpiresAt // learnt if it was unknown
		}
		return when(ok, s)
	case NotFound:
		return when(!s.Exists, s)
	case Unknown: // a read changes nothing, whatever it returned
		return []State{s}
	}
	return nil
}

func when(ok bool, s State) []State {
	if !ok {
		return nil
	}
	return []State{s}
}
