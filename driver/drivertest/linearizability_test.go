package drivertest

import (
	"math"
	"testing"

	"github.com/anishathalye/porcupine"

	"github.com/fenced/fenced"
	"github.com/fenced/fenced/internal/test/linmodel"
)

// These histories are written by hand, with no database: each pins one rule
// of the model, and the Illegal ones show the checker catches the violation.

// synOp is one operation of a hand-written history; times are steps.
func synOp(call, ret int64, in linInput, out linOutput) porcupine.Operation {
	return porcupine.Operation{Input: in, Call: call, Output: out, Return: ret}
}

// Database-clock readings in µs: A's lease runs from synT0 to synT0+50ms.
const (
	synT0    = 1_000_000
	synTTL   = 50_000
	synLater = synT0 + synTTL + 10_000
)

var (
	synAcqA     = linInput{Kind: linAcquire, Name: "job", Owner: "A"}
	synAcqB     = linInput{Kind: linAcquire, Name: "job", Owner: "B"}
	synRenewA1  = linInput{Kind: linRenew, Name: "job", Owner: "A", Fence: 1}
	synTxA1     = linInput{Kind: linTx, Name: "job", Owner: "A", Fence: 1}
	synReleaseA = linInput{Kind: linRelease, Name: "job", Owner: "A", Fence: 1}
	synGet      = linInput{Kind: linGet, Name: "job"}
	synRead     = linInput{Kind: linRead, Name: "job"}
)

func synGranted(owner string, fence, decided, ttl int64) linOutput {
	return linOutput{Result: linOK, Owner: owner, Fence: fence, DecidedAt: decided, ExpiresAt: decided + ttl, Held: true}
}

func synWrite(fence int64, value string) linInput {
	return linInput{Kind: linWrite, Name: "job", Fence: fence, Value: value}
}

func synWritten(fence, version int64) linOutput {
	return linOutput{Result: linOK, Fence: fence, Version: version}
}

func synStale(fence, current int64, owner string, reason fenced.StaleReason) linOutput {
	return linOutput{Result: linStale, Fence: fence, CurrentFence: current, CurrentOwner: owner, Reason: reason}
}

var (
	synOK        = linOutput{Result: linOK}
	synUnknown   = linOutput{Result: linUnknown}
	synTakeoverB = synGranted("B", 2, synLater, 60_000_000)
)

func TestLinearizabilityModel(t *testing.T) {
	cases := []struct {
		name string
		spec linSpec
		ops  []porcupine.Operation
		want porcupine.CheckResult
	}{
		{"TakeoverAfterExpiryThenStaleCalls", linSpec{}, []porcupine.Operation{
			synOp(0, 1, synAcqA, synGranted("A", 1, synT0, synTTL)),
			synOp(2, 3, synWrite(1, "a"), synWritten(1, 1)),
			synOp(4, 5, synAcqB, synTakeoverB),
			synOp(6, 7, synRenewA1, synStale(1, 2, "B", fenced.ReasonSuperseded)),
			synOp(8, 9, synTxA1, synStale(1, 2, "", fenced.ReasonSuperseded)), // B's lease may have ended since
			synOp(10, 11, synWrite(2, "b"), synWritten(2, 2)),
			synOp(12, 13, synWrite(2, "b2"), synWritten(2, 3)),
			synOp(14, 15, synWrite(1, "late"), synStale(1, 2, "", fenced.ReasonSuperseded)),
			synOp(16, 17, synReleaseA, synStale(1, 2, "B", fenced.ReasonSuperseded)),
			synOp(18, 19, synRead, linOutput{Result: linOK, Value: "b2", Fence: 2, Version: 3}),
		}, porcupine.Ok},
		{"ConcurrentTxMayPrecedeRelease", linSpec{}, []porcupine.Operation{
			synOp(0, 1, synAcqA, synGranted("A", 1, synT0, synTTL)),
			synOp(2, 9, synTxA1, linOutput{Result: linOK, Counter: 1}),
			synOp(3, 8, synReleaseA, synOK),
		}, porcupine.Ok},
		{"SameOwnerReacquireKeepsFence", linSpec{}, []porcupine.Operation{
			synOp(0, 1, synAcqA, synGranted("A", 1, synT0, synTTL)),
			synOp(2, 3, synAcqA, synGranted("A", 1, synT0+10_000, synTTL)),
			synOp(4, 5, synRenewA1, synGranted("A", 1, synT0+20_000, synTTL)),
		}, porcupine.Ok},
		{"DuplicateFenceIsCaught", linSpec{}, []porcupine.Operation{
			synOp(0, 1, synAcqA, synGranted("A", 1, synT0, synTTL)),
			synOp(2, 3, synAcqB, synGranted("B", 1, synLater, synTTL)),
		}, porcupine.Illegal},
		{"SkippedFenceIsCaught", linSpec{}, []porcupine.Operation{
			synOp(0, 1, synAcqA, synGranted("A", 1, synT0, synTTL)),
			synOp(2, 3, synAcqB, synGranted("B", 3, synLater, synTTL)),
		}, porcupine.Illegal},
		{"TakeoverBeforeExpiryIsCaught", linSpec{}, []porcupine.Operation{
			synOp(0, 1, synAcqA, synGranted("A", 1, synT0, synTTL)),
			synOp(2, 3, synAcqB, synGranted("B", 2, synT0+synTTL/2, synTTL)),
		}, porcupine.Illegal},
		{"HeldAfterExpiryIsCaught", linSpec{}, []porcupine.Operation{
			synOp(0, 1, synAcqA, synGranted("A", 1, synT0, synTTL)),
			synOp(2, 3, synGet, linOutput{Result: linOK, Owner: "A", Fence: 1, ExpiresAt: synT0 + synTTL, DecidedAt: synLater, Held: true}),
		}, porcupine.Illegal},
		{"StaleRenewAcceptedIsCaught", linSpec{}, []porcupine.Operation{
			synOp(0, 1, synAcqA, synGranted("A", 1, synT0, synTTL)),
			synOp(2, 3, synAcqB, synTakeoverB),
			synOp(4, 5, synRenewA1, synGranted("A", 1, synLater+1000, synTTL)),
		}, porcupine.Illegal},
		{"StaleErrorNamingAnOldFenceIsCaught", linSpec{}, []porcupine.Operation{
			synOp(0, 1, synAcqA, synGranted("A", 1, synT0, synTTL)),
			synOp(2, 3, synAcqB, synTakeoverB),
			synOp(4, 5, synRenewA1, synStale(1, 1, "", fenced.ReasonExpired)),
		}, porcupine.Illegal},
		{"StaleTxAfterReleaseIsReleased", linSpec{}, []porcupine.Operation{
			synOp(0, 1, synAcqA, synGranted("A", 1, synT0, synTTL)),
			synOp(2, 3, synReleaseA, synOK),
			synOp(4, 5, synReleaseA, synOK),
			synOp(6, 7, synTxA1, synStale(1, 1, "", fenced.ReasonReleased)),
		}, porcupine.Ok},
		{"TxAfterReleaseIsCaught", linSpec{}, []porcupine.Operation{
			synOp(0, 1, synAcqA, synGranted("A", 1, synT0, synTTL)),
			synOp(2, 3, synReleaseA, synOK),
			synOp(4, 5, synTxA1, linOutput{Result: linOK, Counter: 1}),
		}, porcupine.Illegal},
		{"LowerFenceWriteAcceptedIsCaught", linSpec{}, []porcupine.Operation{
			synOp(0, 1, synWrite(2, "b"), synWritten(2, 1)),
			synOp(2, 3, synWrite(1, "a"), synWritten(1, 2)),
		}, porcupine.Illegal},
		{"ReadOfOverwrittenValueIsCaught", linSpec{}, []porcupine.Operation{
			synOp(0, 1, synWrite(1, "a"), synWritten(1, 1)),
			synOp(2, 3, synWrite(2, "b"), synWritten(2, 2)),
			synOp(4, 5, synRead, linOutput{Result: linOK, Value: "a", Fence: 1, Version: 1}),
		}, porcupine.Illegal},
		{"LostUpdateIsCaught", linSpec{}, []porcupine.Operation{
			synOp(0, 1, synAcqA, synGranted("A", 1, synT0, synTTL)),
			synOp(2, 3, synTxA1, linOutput{Result: linOK, Counter: 1}),
			synOp(4, 5, synTxA1, linOutput{Result: linOK, Counter: 1}),
		}, porcupine.Illegal},
		{"UnknownAcquireMayHaveGranted", linSpec{}, []porcupine.Operation{
			synOp(0, math.MaxInt64, synAcqA, synUnknown),
			synOp(2, 3, synAcqB, linOutput{Result: linHeld, Owner: "A", Fence: 1, ExpiresAt: synT0 + synTTL}),
			synOp(4, 5, synAcqB, synTakeoverB),
		}, porcupine.Ok},
		{"UnknownAcquireMayHaveDoneNothing", linSpec{}, []porcupine.Operation{
			synOp(0, math.MaxInt64, synAcqA, synUnknown),
			synOp(2, 3, synAcqB, synGranted("B", 1, synT0, synTTL)),
		}, porcupine.Ok},
		{"UnknownAcquireGrantsOneFenceAtMost", linSpec{}, []porcupine.Operation{
			synOp(0, math.MaxInt64, synAcqA, synUnknown),
			synOp(2, 3, synAcqB, synGranted("B", 3, synT0, synTTL)),
		}, porcupine.Illegal},
		{"UnknownReleaseMayTakeEffectLate", linSpec{}, []porcupine.Operation{
			synOp(0, 1, synAcqA, synGranted("A", 1, synT0, 60_000_000)),
			synOp(2, math.MaxInt64, synReleaseA, synUnknown),
			synOp(4, 5, synGet, linOutput{Result: linOK, Owner: "A", Fence: 1, ExpiresAt: synT0 + 60_000_000, DecidedAt: synT0 + 1, Held: true}),
			synOp(6, 7, synAcqB, synGranted("B", 2, synT0+2, synTTL)),
		}, porcupine.Ok},
		{"CounterShowsEveryCommittedTx", linSpec{}, []porcupine.Operation{
			synOp(0, 1, synAcqA, synGranted("A", 1, synT0, synTTL)),
			synOp(2, 3, synTxA1, linOutput{Result: linOK, Counter: 1}),
			synOp(4, 5, linInput{Kind: linmodel.Counter, Name: "job"}, linOutput{Result: linOK, Counter: 1}),
		}, porcupine.Ok},
		{"CounterMissingACommittedTxIsCaught", linSpec{}, []porcupine.Operation{
			synOp(0, 1, synAcqA, synGranted("A", 1, synT0, synTTL)),
			synOp(2, 3, synTxA1, linOutput{Result: linOK, Counter: 1}),
			synOp(4, 5, linInput{Kind: linmodel.Counter, Name: "job"}, linOutput{Result: linOK, Counter: 0}),
		}, porcupine.Illegal},
		{"UnknownReadsChangeNothing", linSpec{}, []porcupine.Operation{
			synOp(0, 1, synWrite(1, "a"), synWritten(1, 1)),
			synOp(2, math.MaxInt64, synRead, synUnknown),
			synOp(3, math.MaxInt64, synGet, synUnknown),
			synOp(4, 5, synRead, linOutput{Result: linOK, Value: "a", Fence: 1, Version: 1}),
		}, porcupine.Ok},
		{"ModelWhereRenewIgnoresFenceRejectsARealStaleRenew", linSpec{RenewIgnoresFence: true}, []porcupine.Operation{
			synOp(0, 1, synAcqA, synGranted("A", 1, synT0, synTTL)),
			synOp(2, 3, synAcqB, synTakeoverB),
			synOp(4, 5, synRenewA1, synStale(1, 2, "B", fenced.ReasonSuperseded)),
		}, porcupine.Illegal},
		{"ModelWhereWriteIgnoresFenceRejectsARealStaleWrite", linSpec{WriteIgnoresFence: true}, []porcupine.Operation{
			synOp(0, 1, synWrite(2, "b"), synWritten(2, 1)),
			synOp(2, 3, synWrite(1, "a"), synStale(1, 2, "", fenced.ReasonSuperseded)),
		}, porcupine.Illegal},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			if got := porcupine.CheckOperations(linModel(c.spec), c.ops); got != (c.want == porcupine.Ok) {
				t.Fatalf("linearizable = %v, want %s", got, c.want)
			}
		})
	}
}
