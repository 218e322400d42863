package fencedtest

import (
	"fmt"
	"hash/fnv"

	"github.com/anishathalye/porcupine"

	"github.com/fenced/fenced"
)

// This file is the sequential specification of design §4–§5 that recorded
// histories are checked against: one lease, the counter its holders bump in
// fenced transactions, and the resource written under its fences. A history
// is partitioned by lease name, so each partition has exactly that state.
//
// Expiry is judged by the database clock, which the model cannot read. An
// operation that reports the database's decision time (Acquire, Renew, Get:
// Lease.DecidedAt) is judged exactly at that time, give or take linSlack;
// every other operation may find the generation expired or not, whichever its
// outcome needs. Expiry is judged per operation and not carried forward,
// because under MVCC the order of commits and the order of clock readings can
// disagree (a renew decided before the expiry may commit after a read that
// saw it expire). Fences, owners, release, the counter and the resource are
// checked exactly.
//
// An outcome the client could not learn (its context ended mid-call, so the
// statement may or may not have committed) is linUnknown: the operation
// either did nothing or did what it would have done, and it returns at
// +infinity, since it can take effect at any time after its call.

// linKind names an operation of the recorded workload.
type linKind uint8

const (
	linAcquire linKind = iota + 1 // Acquire(Name, Owner, ttl)
	linRenew                      // Renew(Name, Owner, Fence)
	linRelease                    // Release(Name, Owner, Fence)
	linTx                         // LeaseTx(Name, Owner, Fence): counter := counter + 1
	linWrite                      // WriteResource(key of Name, Value, Fence)
	linRead                       // ReadResource(key of Name)
	linGet                        // Get(Name)
)

var linKindNames = map[linKind]string{linAcquire: "acquire", linRenew: "renew", linRelease: "release",
	linTx: "tx", linWrite: "write", linRead: "read", linGet: "get"}

func (k linKind) String() string { return linKindNames[k] }

// linInput is one call. Name is the lease name, and the partition.
type linInput struct {
	Kind  linKind
	Name  string
	Owner string // acquire; the caller's generation for renew, release, tx
	Fence int64  // the caller's generation for renew, release, tx; the write's fence
	Value string // write
}

// linResult classifies what a call returned.
type linResult uint8

const (
	linOK       linResult = iota + 1
	linHeld               // *HeldError
	linStale              // *StaleError
	linNotFound           // ErrNotFound
	linUnknown            // ambiguous: the statement may or may not have committed
)

// linOutput is what a call returned. Times are database-clock microseconds.
type linOutput struct {
	Result linResult
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

// linState is one partition's state: the lease row, the counter and the
// resource. A zero Expires means the expiry is not known (granted or renewed
// by an ambiguous call, or cut short by release).
type linState struct {
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

// linSlack is the uncertainty allowed between a reported decision time and
// the clock readings the deciding statement compared with the expiry.
const linSlack = 1000 // µs

// linSpec selects deliberately broken variants of the model, used to show
// that the checker notices when the specification and the system disagree.
type linSpec struct {
	renewIgnoresFence bool // renew succeeds for any unreleased, unexpired lease
	writeIgnoresFence bool // a resource write is always accepted
}

// linModel is the specification as a porcupine model.
func linModel(spec linSpec) porcupine.Model {
	nm := porcupine.NondeterministicModel{
		Partition: linPartition,
		Init:      func() []any { return []any{linState{}} },
		Step: func(state, input, output any) []any {
			next := spec.step(state.(linState), input.(linInput), output.(linOutput))
			out := make([]any, len(next))
			for i, s := range next {
				out[i] = s
			}
			return out
		},
		Hash:              linHash,
		DescribeOperation: linDescribe,
		DescribeState:     func(s any) string { return fmt.Sprintf("%+v", s) },
	}
	return nm.ToModel()
}

func linPartition(history []porcupine.Operation) [][]porcupine.Operation {
	byName := map[string]int{}
	var out [][]porcupine.Operation
	for _, op := range history {
		name := op.Input.(linInput).Name
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

func linHash(state any) uint64 {
	h := fnv.New64a()
	fmt.Fprintf(h, "%v", state)
	return h.Sum64()
}

func linDescribe(input, output any) string {
	in, out := input.(linInput), output.(linOutput)
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
	case linOK:
		return call + " -> ok" + linDescribeOK(in.Kind, out)
	case linHeld:
		return call + fmt.Sprintf(" -> held by %s fence %d", out.Owner, out.Fence)
	case linStale:
		return call + fmt.Sprintf(" -> stale (%s, current fence %d %q)", out.Reason, out.CurrentFence, out.CurrentOwner)
	case linNotFound:
		return call + " -> not found"
	default:
		return call + " -> unknown"
	}
}

func linDescribeOK(k linKind, out linOutput) string {
	switch k {
	case linAcquire, linRenew, linGet:
		s := fmt.Sprintf(" %s fence %d expires %d (decided %d)", out.Owner, out.Fence, out.ExpiresAt, out.DecidedAt)
		if out.Released {
			s += " released"
		} else if !out.Held {
			s += " not held"
		}
		return s
	case linTx:
		return fmt.Sprintf(" counter %d", out.Counter)
	case linWrite:
		return fmt.Sprintf(" version %d", out.Version)
	case linRead:
		return fmt.Sprintf(" %q fence %d version %d", out.Value, out.Fence, out.Version)
	}
	return ""
}

// step returns every state the system can be in after in returned out from
// s; none when it cannot.
func (spec linSpec) step(s linState, in linInput, out linOutput) []linState {
	switch in.Kind {
	case linAcquire:
		return s.acquire(in, out)
	case linRenew:
		return spec.renew(s, in, out)
	case linRelease:
		return s.release(in, out)
	case linTx:
		return s.tx(in, out)
	case linWrite:
		return spec.write(s, in, out)
	case linRead:
		return s.read(out)
	case linGet:
		return s.get(out)
	}
	return nil
}

// expiry says whether the generation may be expired, and whether it may be
// unexpired, at database time at (0: unknown).
func (s linState) expiry(at int64) (mayExpired, mayLive bool) {
	switch {
	case s.Expires == 0 || at == 0:
		return true, true
	case at >= s.Expires+linSlack:
		return true, false
	case at < s.Expires-linSlack:
		return false, true
	}
	return true, true
}

// mine reports whether the caller's generation is the stored one.
func (s linState) mine(in linInput) bool {
	return s.Exists && s.Owner == in.Owner && s.Fence == in.Fence
}

// granted is s after a grant or extension to owner with fence.
func (s linState) granted(owner string, fence, expires int64) linState {
	s.Exists, s.Owner, s.Fence, s.Released, s.Expires = true, owner, fence, false, expires
	return s
}

func (s linState) acquire(in linInput, out linOutput) []linState {
	mayExpired, mayLive := s.expiry(out.DecidedAt)
	free := !s.Exists || s.Released || mayExpired
	extend := s.Exists && !s.Released && mayLive && s.Owner == in.Owner
	switch out.Result {
	case linOK:
		ok := out.Owner == in.Owner && out.Held && !out.Released &&
			(free && out.Fence == s.Fence+1 || extend && out.Fence == s.Fence)
		return when(ok, s.granted(in.Owner, out.Fence, out.ExpiresAt))
	case linHeld:
		// Refused: another owner holds it, unexpired (no decision time is
		// reported with the refusal, so any expiry fits).
		ok := s.Exists && !s.Released && s.Owner != in.Owner && out.Owner == s.Owner &&
			out.Fence == s.Fence && (s.Expires == 0 || out.ExpiresAt == s.Expires)
		s.Expires = out.ExpiresAt // the holder's expiry, learnt if it was unknown
		return when(ok, s)
	case linUnknown:
		next := []linState{s}
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

func (spec linSpec) renew(s linState, in linInput, out linOutput) []linState {
	current := func(live bool) bool { return s.mine(in) && !s.Released && live }
	if spec.renewIgnoresFence {
		current = func(live bool) bool { return s.Exists && !s.Released && live }
	}
	switch out.Result {
	case linOK:
		_, mayLive := s.expiry(out.DecidedAt)
		ok := current(mayLive) && out.Owner == in.Owner && out.Fence == in.Fence && out.Held
		s.Expires = out.ExpiresAt
		return when(ok, s)
	case linStale:
		return when(s.staleLease(in, out, current), s)
	case linNotFound:
		return when(!s.Exists, s)
	case linUnknown:
		if current(true) {
			renewed := s
			renewed.Expires = 0
			return []linState{s, renewed}
		}
		return []linState{s}
	}
	return nil
}

func (s linState) release(in linInput, out linOutput) []linState {
	released := s
	released.Released, released.Expires = true, 0
	switch out.Result {
	case linOK:
		return when(s.mine(in), released)
	case linStale:
		return when(s.staleLease(in, out, func(bool) bool { return s.mine(in) }), s)
	case linNotFound:
		return when(!s.Exists, s)
	case linUnknown:
		if s.mine(in) {
			return []linState{s, released}
		}
		return []linState{s}
	}
	return nil
}

func (s linState) tx(in linInput, out linOutput) []linState {
	current := func(live bool) bool { return s.mine(in) && !s.Released && live }
	bumped := s
	bumped.Counter++
	switch out.Result {
	case linOK:
		return when(current(true) && out.Counter == bumped.Counter, bumped)
	case linStale:
		return when(s.staleLease(in, out, current), s)
	case linNotFound:
		return when(!s.Exists, s)
	case linUnknown:
		if current(true) {
			return []linState{s, bumped}
		}
		return []linState{s}
	}
	return nil
}

// staleLease reports whether out is a stale error s can produce for the
// caller's generation in, where current(live) says whether the call would
// have succeeded with the generation unexpired (live) or not. The error is
// diagnosed from the row: superseded unless the caller's owner and fence are
// stored, then released, then expired; the current owner is named only while
// the stored generation is held.
func (s linState) staleLease(in linInput, out linOutput, current func(live bool) bool) bool {
	if !s.Exists || out.Fence != in.Fence || out.CurrentFence != s.Fence {
		return false
	}
	reason := fenced.ReasonExpired
	switch {
	case !s.mine(in):
		reason = fenced.ReasonSuperseded
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

func (spec linSpec) write(s linState, in linInput, out linOutput) []linState {
	accept := !s.ResExists || in.Fence >= s.ResFence || spec.writeIgnoresFence
	written := s
	written.ResExists, written.ResValue, written.ResFence, written.ResVersion = true, in.Value, in.Fence, s.ResVersion+1
	switch out.Result {
	case linOK:
		return when(accept && out.Fence == in.Fence && out.Version == written.ResVersion, written)
	case linStale:
		ok := !accept && out.Fence == in.Fence && out.CurrentFence == s.ResFence &&
			out.Reason == fenced.ReasonSuperseded && out.CurrentOwner == ""
		return when(ok, s)
	case linUnknown:
		if accept {
			return []linState{s, written}
		}
		return []linState{s}
	}
	return nil
}

func (s linState) read(out linOutput) []linState {
	switch out.Result {
	case linOK:
		ok := s.ResExists && out.Value == s.ResValue && out.Fence == s.ResFence && out.Version == s.ResVersion
		return when(ok, s)
	case linNotFound:
		return when(!s.ResExists, s)
	}
	return nil
}

func (s linState) get(out linOutput) []linState {
	switch out.Result {
	case linOK:
		mayExpired, mayLive := s.expiry(out.DecidedAt)
		ok := s.Exists && out.Owner == s.Owner && out.Fence == s.Fence && out.Released == s.Released &&
			(s.Released || s.Expires == 0 || out.ExpiresAt == s.Expires) &&
			(out.Held && !s.Released && mayLive || !out.Held && (s.Released || mayExpired))
		if !s.Released {
			s.Expires = out.ExpiresAt // learnt if it was unknown
		}
		return when(ok, s)
	case linNotFound:
		return when(!s.Exists, s)
	}
	return nil
}

func when(ok bool, s linState) []linState {
	if !ok {
		return nil
	}
	return []linState{s}
}
