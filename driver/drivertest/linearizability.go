package drivertest

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"

	"github.com/fenced/fenced"
)

// The recorded workload: six workers over three clients on two leases, for
// linRunFor, then a short sequential coda on a third lease that is sure to
// contain a takeover and the stale calls after it.
const (
	linWorkers      = 6
	linClients      = 3
	linRunFor       = 1500 * time.Millisecond
	linUnknownEvery = 15 // about one call in this many gets a context that ends mid-call
	linUnknownMax   = 2  // per worker: each ambiguous call widens the search (4 a worker left a mutated history unchecked after 2 minutes on a loaded machine)
	linCheckTimeout = 2 * time.Minute
	linCounterDDL   = `CREATE TABLE fenced_test_lin (k VARCHAR(100) PRIMARY KEY, v BIGINT NOT NULL)`
)

var linNames = []string{"lin-a", "lin-b", "lin-coda"}

// runLinearizability records a concurrent history of acquire, renew, release,
// fenced transactions, resource writes and reads, checks it against the
// sequential model of docs/design.md §4–§5 (linearizability_model.go), and then shows
// the checker is not vacuous: the same history with one outcome changed into
// a violation, and the same history against a deliberately wrong model, must
// both be reported illegal.
func runLinearizability(t *testing.T, b Backend) {
	e := setup(t, b)
	if b.NoSQL == "" {
		b.Exec(t, e.url, linCounterDDL)
		b.Exec(t, e.url, `INSERT INTO fenced_test_lin (k, v) VALUES ('lin-a', 0), ('lin-b', 0), ('lin-coda', 0)`)
	}
	ops := recordLinHistory(t, e)
	if t.Failed() {
		return
	}
	t.Logf("%s: %s", b.Name, linSummary(ops))
	slack := b.ExpirySlack.Microseconds()
	model := linModel(linSpec{Slack: slack})

	t.Run("HistoryIsLinearizable", func(t *testing.T) { wantLinearizable(t, model, ops) })
	for _, m := range linMutations {
		t.Run("CheckerCatches"+m.name, func(t *testing.T) {
			if m.name == "LostUpdate" {
				b.needSQL(t) // no fenced transactions in the history
			}
			bad, what := mutateLin(t, ops, m)
			t.Logf("mutated: %s", what)
			wantIllegal(t, model, bad)
		})
	}
	t.Run("CheckerCatchesModelWhereRenewIgnoresFence", func(t *testing.T) {
		wantIllegal(t, linModel(linSpec{RenewIgnoresFence: true, Slack: slack}), ops)
	})
	t.Run("CheckerCatchesModelWhereWriteIgnoresFence", func(t *testing.T) {
		wantIllegal(t, linModel(linSpec{WriteIgnoresFence: true, Slack: slack}), ops)
	})
}

// wantLinearizable fails t unless ops is linearizable for model; on failure
// it writes porcupine's visualization to a file and names it.
func wantLinearizable(t *testing.T, model porcupine.Model, ops []porcupine.Operation) {
	t.Helper()
	res := porcupine.CheckOperationsTimeout(model, ops, linCheckTimeout)
	if res == porcupine.Ok {
		return
	}
	res, info := porcupine.CheckOperationsVerbose(model, ops, linCheckTimeout)
	t.Fatalf("history of %d operations is %s, want Ok; visualization: %s", len(ops), res, visualizeLin(model, info))
}

// wantIllegal fails t unless the checker proves ops not linearizable.
func wantIllegal(t *testing.T, model porcupine.Model, ops []porcupine.Operation) {
	t.Helper()
	if res := porcupine.CheckOperationsTimeout(model, ops, linCheckTimeout); res != porcupine.Illegal {
		t.Fatalf("checker says %s for a history that breaks the model, want Illegal", res)
	}
}

func visualizeLin(model porcupine.Model, info porcupine.LinearizationInfo) string {
	f, err := os.CreateTemp("", "fenced-linearizability-*.html")
	if err != nil {
		return fmt.Sprintf("(none: %v)", err)
	}
	defer f.Close()
	if err := porcupine.Visualize(model, info, f); err != nil {
		return fmt.Sprintf("(none: %v)", err)
	}
	return f.Name()
}

// linRecorder collects operations with call and return times on one
// monotonic clock.
type linRecorder struct {
	start time.Time
	mu    sync.Mutex
	ops   []porcupine.Operation
}

func (r *linRecorder) since() int64 { return time.Since(r.start).Nanoseconds() }

// add records one operation. An ambiguous call returns at +infinity: it may
// take effect at any time after its call (a killed connection's statement
// can still commit). An ambiguous read changes nothing and is left out.
func (r *linRecorder) add(client int, in linInput, call, ret int64, out linOutput) {
	if out.Result == linUnknown {
		if in.Kind == linRead || in.Kind == linGet {
			return
		}
		ret = math.MaxInt64
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.ops = append(r.ops, porcupine.Operation{ClientId: client, Input: in, Call: call, Output: out, Return: ret})
}

// recordLinHistory runs the workload and returns its history.
func recordLinHistory(t *testing.T, e *env) []porcupine.Operation {
	clients := []*fenced.Client{e.c}
	for range linClients - 1 {
		clients = append(clients, e.b.open(t, e.url, fenced.Config{}))
	}
	rec := &linRecorder{start: time.Now()}
	newWorker := func(id int, name, owner string, unknowns int) *linWorker {
		return &linWorker{t: t, e: e, rec: rec, id: id, c: clients[id%len(clients)], name: name, owner: owner,
			rng: rand.New(rand.NewPCG(rand.Uint64(), uint64(id))), unknownsLeft: unknowns}
	}
	var wg sync.WaitGroup
	for i := range linWorkers {
		w := newWorker(i, linNames[i%2], fmt.Sprintf("w%d", i), linUnknownMax)
		wg.Go(func() { w.run(linRunFor + 3*e.b.MinTTL) })
	}
	wg.Wait()
	linCoda(t, newWorker(linWorkers, "lin-coda", "coda-A", 0), newWorker(linWorkers+1, "lin-coda", "coda-B", 0))
	return rec.ops
}

// linCoda makes sure the history holds a takeover after expiry and every
// stale call that follows it, sequentially.
func linCoda(t *testing.T, a, b *linWorker) {
	a.acquireFor(a.e.b.ttl(30 * time.Millisecond))
	if a.mine == nil {
		t.Errorf("coda: A did not get the lease")
		return
	}
	la := *a.mine
	a.write(la)
	deadline := time.Now().Add(10 * time.Second)
	for a.get().Held && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	b.acquireFor(long)
	if b.mine == nil {
		t.Errorf("coda: B did not take over")
		return
	}
	lb := *b.mine
	a.renew(la)
	a.tx(la)
	b.write(lb)
	b.write(lb)
	a.write(la)
	a.release(la)
	b.tx(lb)
	b.tx(lb)
	b.release(lb)
	b.read()
	b.get()
}

// linWorker is one goroutine of the workload: one owner on one lease.
type linWorker struct {
	t            *testing.T
	e            *env
	rec          *linRecorder
	id           int
	c            *fenced.Client
	name, owner  string
	rng          *rand.Rand
	unknownsLeft int
	mine         *fenced.Lease  // the generation it believes it holds
	old          []fenced.Lease // generations it held before
	writes       int
}

func (w *linWorker) run(d time.Duration) {
	for w.rec.since() < d.Nanoseconds() && !w.t.Failed() {
		w.step()
	}
}

// step does one random operation, mostly what a holder or a contender
// would do, sometimes what a paused or stale one would.
func (w *linWorker) step() {
	if w.mine == nil {
		switch r := w.rng.IntN(10); {
		case r < 6:
			if w.acquire().Result == linHeld {
				time.Sleep(time.Duration(w.rng.IntN(3000)) * time.Microsecond)
			}
		case r < 7:
			w.get()
		case r < 8:
			w.read()
		default:
			w.stale()
		}
		return
	}
	l := *w.mine
	switch r := w.rng.IntN(20); {
	case r < 4:
		w.renew(l)
	case r < 8:
		w.tx(l)
	case r < 11:
		w.write(l)
	case r < 13:
		w.release(l)
	case r < 14:
		w.acquire() // re-entry keeps the fence while held
	case r < 15:
		w.get()
	case r < 16:
		w.read()
	case r < 18:
		time.Sleep(w.pause()) // a pause past the ttl, maybe
	default:
		w.stale()
	}
}

// stale calls with a generation this worker held before.
func (w *linWorker) stale() {
	if len(w.old) == 0 {
		w.get()
		return
	}
	l := w.old[w.rng.IntN(len(w.old))]
	switch w.rng.IntN(4) {
	case 0:
		w.renew(l)
	case 1:
		w.release(l)
	case 2:
		w.tx(l)
	default:
		w.write(l)
	}
}

// context returns the context of one call: now and then one that ends
// within two milliseconds, so the call may be cut off mid-flight.
func (w *linWorker) context() (context.Context, context.CancelFunc) {
	if w.unknownsLeft > 0 && w.rng.IntN(linUnknownEvery) == 0 {
		return context.WithTimeout(context.Background(), time.Duration(w.rng.IntN(2000))*time.Microsecond)
	}
	return context.WithTimeout(context.Background(), time.Minute)
}

// call runs f and records it with its outcome.
func (w *linWorker) call(in linInput, f func(context.Context) (linOutput, error)) linOutput {
	ctx, cancel := w.context()
	defer cancel()
	call := w.rec.since()
	out, err := f(ctx)
	ret := w.rec.since()
	if err != nil {
		out = w.outcome(ctx, in, err)
	}
	w.rec.add(w.id, in, call, ret, out)
	return out
}

// outcome classifies an error: a typed outcome is definite; anything else
// from a call whose context ended is ambiguous.
func (w *linWorker) outcome(ctx context.Context, in linInput, err error) linOutput {
	var stale *fenced.StaleError
	var held *fenced.HeldError
	switch {
	case errors.As(err, &stale):
		return linOutput{Result: linStale, Fence: stale.Fence, CurrentFence: stale.CurrentFence,
			CurrentOwner: stale.CurrentOwner, Reason: stale.Reason}
	case errors.As(err, &held):
		return linOutput{Result: linHeld, Owner: held.Owner, Fence: held.Fence, ExpiresAt: held.ExpiresAt.UnixMicro()}
	case errors.Is(err, fenced.ErrNotFound):
		return linOutput{Result: linNotFound}
	case errors.Is(err, fenced.ErrUnknownOutcome): // the connection failed after the call was sent
	case ctx.Err() == nil:
		w.t.Errorf("%s %s by %s: unexpected error: %v", in.Kind, in.Name, w.owner, err)
	}
	w.unknownsLeft--
	return linOutput{Result: linUnknown}
}

func leaseOutput(l *fenced.Lease) linOutput {
	return linOutput{Result: linOK, Owner: l.Owner, Fence: l.Fence, ExpiresAt: l.ExpiresAt.UnixMicro(),
		DecidedAt: l.DecidedAt.UnixMicro(), Held: l.Held, Released: l.Released}
}

// hold records that this worker now holds l.
func (w *linWorker) hold(l fenced.Lease) {
	if w.mine != nil && w.mine.Fence != l.Fence {
		w.old = append(w.old, *w.mine)
	}
	w.mine = &l
}

// lose records that l, if it is the one held, is held no more.
func (w *linWorker) lose(l fenced.Lease) {
	if w.mine == nil || w.mine.Fence != l.Fence {
		return
	}
	w.old = append(w.old, *w.mine)
	if len(w.old) > 4 {
		w.old = w.old[1:]
	}
	w.mine = nil
}

func (w *linWorker) acquire() linOutput {
	return w.acquireFor(w.ttl())
}

// ttl is a lease's TTL: 20–80 ms, or one or two of the backend's MinTTL.
func (w *linWorker) ttl() time.Duration {
	if m := w.e.b.MinTTL; m > 0 {
		return m * time.Duration(1+w.rng.IntN(2))
	}
	return time.Duration(20+w.rng.IntN(61)) * time.Millisecond
}

// pause is a holder's pause, up to 60 ms or 1.5 MinTTL: past its ttl, maybe.
func (w *linWorker) pause() time.Duration {
	if m := w.e.b.MinTTL; m > 0 {
		return time.Duration(w.rng.Int64N(int64(m * 3 / 2)))
	}
	return time.Duration(w.rng.IntN(60)) * time.Millisecond
}

func (w *linWorker) acquireFor(ttl time.Duration) linOutput {
	in := linInput{Kind: linAcquire, Name: w.name, Owner: w.owner}
	var got *fenced.Lease
	out := w.call(in, func(ctx context.Context) (linOutput, error) {
		l, err := w.c.AcquireLease(ctx, w.name, w.owner, ttl)
		if err != nil {
			return linOutput{}, err
		}
		got = l
		return leaseOutput(l), nil
	})
	if out.Result == linOK {
		w.hold(*got)
	}
	return out
}

func (w *linWorker) renew(l fenced.Lease) {
	in := linInput{Kind: linRenew, Name: l.Name, Owner: l.Owner, Fence: l.Fence}
	var got *fenced.Lease
	out := w.call(in, func(ctx context.Context) (linOutput, error) {
		r, err := w.c.RenewLease(ctx, l, w.ttl())
		if err != nil {
			return linOutput{}, err
		}
		got = r
		return leaseOutput(r), nil
	})
	switch {
	case out.Result == linOK && w.mine != nil && w.mine.Fence == l.Fence:
		w.mine = got
	case out.Result == linStale:
		w.lose(l)
	}
}

func (w *linWorker) release(l fenced.Lease) {
	in := linInput{Kind: linRelease, Name: l.Name, Owner: l.Owner, Fence: l.Fence}
	w.call(in, func(ctx context.Context) (linOutput, error) {
		_, err := w.c.ReleaseLease(ctx, l)
		return linOutput{Result: linOK}, err
	})
	w.lose(l) // released, stale or unknown: not to be relied on again
}

// tx bumps the lease's counter in a fenced transaction and reads it back.
func (w *linWorker) tx(l fenced.Lease) {
	if w.e.b.NoSQL != "" {
		w.write(l) // no SQL table to bump a counter in
		return
	}
	in := linInput{Kind: linTx, Name: l.Name, Owner: l.Owner, Fence: l.Fence}
	out := w.call(in, func(ctx context.Context) (linOutput, error) {
		var n int64
		err := w.c.LeaseTx(ctx, l, func(tx fenced.Tx) error {
			if _, err := tx.Exec(ctx, w.e.b.bind(`UPDATE fenced_test_lin SET v = v + 1 WHERE k = $1`), l.Name); err != nil {
				return err
			}
			return tx.QueryRow(ctx, w.e.b.bind(`SELECT v FROM fenced_test_lin WHERE k = $1`), l.Name).Scan(&n)
		})
		return linOutput{Result: linOK, Counter: n}, err
	})
	if out.Result == linStale {
		w.lose(l)
	}
}

// write stores a value no other write uses under the lease's resource key.
func (w *linWorker) write(l fenced.Lease) {
	w.writes++
	value := fmt.Sprintf("%s/%d/%d", w.owner, l.Fence, w.writes)
	in := linInput{Kind: linWrite, Name: l.Name, Fence: l.Fence, Value: value}
	out := w.call(in, func(ctx context.Context) (linOutput, error) {
		r, err := w.c.WriteResource(ctx, "res-"+l.Name, []byte(value), l.Fence, fenced.WriteOptions{})
		if err != nil {
			return linOutput{}, err
		}
		return linOutput{Result: linOK, Fence: r.Fence, Version: r.Version}, nil
	})
	if out.Result == linStale {
		w.lose(l) // a newer generation has written
	}
}

func (w *linWorker) read() {
	w.call(linInput{Kind: linRead, Name: w.name}, func(ctx context.Context) (linOutput, error) {
		r, err := w.c.ReadResource(ctx, "res-"+w.name)
		if err != nil {
			return linOutput{}, err
		}
		return linOutput{Result: linOK, Value: string(r.Value), Fence: r.Fence, Version: r.Version}, nil
	})
}

func (w *linWorker) get() linOutput {
	return w.call(linInput{Kind: linGet, Name: w.name}, func(ctx context.Context) (linOutput, error) {
		l, err := w.c.GetLease(ctx, w.name)
		if err != nil {
			return linOutput{}, err
		}
		return leaseOutput(l), nil
	})
}

// linSummary counts a history's operations by kind and outcome.
func linSummary(ops []porcupine.Operation) string {
	counts := map[string]int{}
	for _, op := range ops {
		in, out := op.Input.(linInput), op.Output.(linOutput)
		key := in.Kind.String() + " " + [...]string{"?", "ok", "held", "stale", "not-found", "unknown"}[out.Result]
		if out.Result == linStale {
			key += "/" + string(out.Reason)
		}
		counts[key]++
	}
	keys := make([]string, 0, len(counts))
	for k := range counts {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = fmt.Sprintf("%s %d", k, counts[k])
	}
	return fmt.Sprintf("%d operations on %d leases: %s", len(ops), len(linNames), strings.Join(parts, ", "))
}

// linMutation turns one real outcome x into a violation that real time
// forces, given a witness y on the same lease that returned before x was
// called: no order of the operations can explain the changed history.
type linMutation struct {
	name    string
	witness func(x, y porcupine.Operation) bool
	change  func(x, y porcupine.Operation) linOutput
}

var linMutations = []linMutation{
	{
		// x granted a fence an earlier grant already gave another owner.
		name: "DuplicateFence",
		witness: func(x, y porcupine.Operation) bool {
			return linIs(x, linAcquire, linOK) && linIs(y, linAcquire, linOK) &&
				linIn(x).Owner != linIn(y).Owner && linOut(y).Fence < linOut(x).Fence
		},
		change: func(x, y porcupine.Operation) linOutput { o := linOut(x); o.Fence = linOut(y).Fence; return o },
	},
	{
		// x's resource write is accepted after a higher fence was stored.
		name: "StaleWriteAccepted",
		witness: func(x, y porcupine.Operation) bool {
			return linIs(x, linWrite, linStale) && linIs(y, linWrite, linOK) && linIn(y).Fence > linIn(x).Fence
		},
		change: func(x, y porcupine.Operation) linOutput {
			return linOutput{Result: linOK, Fence: linIn(x).Fence, Version: linOut(y).Version + 1}
		},
	},
	{
		// x renews its generation after a newer one was granted.
		name: "StaleRenewAccepted",
		witness: func(x, y porcupine.Operation) bool {
			return linIs(x, linRenew, linStale) && linIs(y, linAcquire, linOK) && linOut(y).Fence > linIn(x).Fence
		},
		change: func(x, y porcupine.Operation) linOutput {
			return linOutput{Result: linOK, Owner: linIn(x).Owner, Fence: linIn(x).Fence, Held: true, ExpiresAt: linOut(y).ExpiresAt}
		},
	},
	{
		// x's fenced transaction reads the counter an earlier one produced:
		// a lost update.
		name: "LostUpdate",
		witness: func(x, y porcupine.Operation) bool {
			return linIs(x, linTx, linOK) && linIs(y, linTx, linOK) && linOut(y).Counter == linOut(x).Counter-1
		},
		change: func(x, y porcupine.Operation) linOutput { o := linOut(x); o.Counter = linOut(y).Counter; return o },
	},
}

func linIn(op porcupine.Operation) linInput   { return op.Input.(linInput) }
func linOut(op porcupine.Operation) linOutput { return op.Output.(linOutput) }

func linIs(op porcupine.Operation, k linKind, r linResult) bool {
	return linIn(op).Kind == k && linOut(op).Result == r
}

// mutateLin applies m to the earliest operation it fits (the earlier the
// violation, the less history the checker must rule out) and returns the
// changed copy of ops.
func mutateLin(t *testing.T, ops []porcupine.Operation, m linMutation) ([]porcupine.Operation, string) {
	t.Helper()
	byCall := make([]int, len(ops))
	for i := range byCall {
		byCall[i] = i
	}
	sort.Slice(byCall, func(a, b int) bool { return ops[byCall[a]].Call < ops[byCall[b]].Call })
	for _, xi := range byCall {
		x := ops[xi]
		for _, y := range ops {
			if y.Return < x.Call && linIn(y).Name == linIn(x).Name && m.witness(x, y) {
				bad := append([]porcupine.Operation(nil), ops...)
				bad[xi].Output = m.change(x, y)
				return bad, fmt.Sprintf("%s, was %s (after %s)", linDescribe(x.Input, bad[xi].Output),
					linDescribe(x.Input, x.Output), linDescribe(y.Input, y.Output))
			}
		}
	}
	t.Fatalf("the history has no operation to turn into a %s", m.name)
	return nil, ""
}
