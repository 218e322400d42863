package chaos

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"sort"
	"sync"
	"time"

	"github.com/anishathalye/porcupine"

	"github.com/fenced/fenced/internal/test/linmodel"
)

// Each worker process writes its history to a file of its own, one JSON
// line per event, appended with a single write so that a SIGKILL loses at
// most the line being written. A call is logged before it is made and its
// return after it returns: a call with no return line is a call the
// process was killed in, whose effect is unknown.

// record is one line of a history file.
type record struct {
	T string `json:"t"` // "call", "ret" (lease and resource operations), "job"

	// call and ret
	ID   int64            `json:"id,omitempty"`   // per process, ties a ret to its call
	At   int64            `json:"at,omitempty"`   // wall clock, Unix nanoseconds
	In   *linmodel.Input  `json:"in,omitempty"`   // call
	Out  *linmodel.Output `json:"out,omitempty"`  // ret
	Err  string           `json:"err,omitempty"`  // ret: the error behind an unknown outcome
	Proc string           `json:"proc,omitempty"` // the process (worker incarnation)

	// job: one protected write of a job attempt (its transaction, which
	// completes the job) and what became of it; At is its return.
	Call   int64  `json:"call,omitempty"` // wall clock at the call, Unix nanoseconds
	Job    int64  `json:"job,omitempty"`
	Fence  int64  `json:"fence,omitempty"`
	Result string `json:"result,omitempty"` // ok, stale, not_found, unknown, failed
}

// Job outcomes as workers record them.
const (
	jobOK       = "ok"        // the attempt's transaction committed, the job completed in it
	jobStale    = "stale"     // rejected: the attempt was no longer current
	jobNotFound = "not_found" // rejected as not found: an anomaly
	jobUnknown  = "unknown"   // the outcome could not be learnt (connection lost, context ended)
	jobFailed   = "failed"    // the handler failed the attempt on purpose, nothing written
)

// recorder appends records to a history file.
type recorder struct {
	mu   sync.Mutex
	f    *os.File
	proc string
	next int64
}

func newRecorder(path, proc string) (*recorder, error) {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
	if err != nil {
		return nil, err
	}
	return &recorder{f: f, proc: proc}, nil
}

func (r *recorder) write(rec record) {
	b, err := json.Marshal(rec)
	if err != nil {
		panic(err) // only our own types are marshalled
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, err := r.f.Write(append(b, '\n')); err != nil {
		// A history with a hole would be checked as if the call never
		// happened: better no history than a wrong one.
		fmt.Fprintf(os.Stderr, "chaos: %s: write history: %v\n", r.proc, err)
		os.Exit(3)
	}
}

// call logs a call and returns its id.
func (r *recorder) call(in linmodel.Input) int64 {
	r.mu.Lock()
	r.next++
	id := r.next
	r.mu.Unlock()
	r.write(record{T: "call", ID: id, At: time.Now().UnixNano(), In: &in, Proc: r.proc})
	return id
}

// ret logs the return of call id.
func (r *recorder) ret(id int64, out linmodel.Output, err error) {
	rec := record{T: "ret", ID: id, At: time.Now().UnixNano(), Out: &out, Proc: r.proc}
	if err != nil && out.Result == linmodel.Unknown {
		rec.Err = err.Error()
	}
	r.write(rec)
}

// job logs the outcome of a job attempt's protected write, called at call.
func (r *recorder) job(id, fence int64, call time.Time, result string) {
	r.write(record{T: "job", Job: id, Fence: fence, Result: result, Call: call.UnixNano(), At: time.Now().UnixNano(), Proc: r.proc})
}

func (r *recorder) close() error { return r.f.Close() }

// history is every worker's records, read back after the run.
type history struct {
	ops     []porcupine.Operation // lease and resource operations, for porcupine
	jobs    []record              // job attempt outcomes
	unknown int                   // operations whose outcome is unknown
	errs    map[string]int        // the errors behind unknown outcomes, by message, a few
	clients int                   // processes read, each a porcupine client
}

// readHistories reads every *.jsonl file of dir.
func readHistories(dir string) (*history, error) {
	files, err := filepath.Glob(filepath.Join(dir, "*.jsonl"))
	if err != nil {
		return nil, err
	}
	sort.Strings(files)
	h := &history{errs: map[string]int{}}
	for _, f := range files {
		if err := h.read(f); err != nil {
			return nil, fmt.Errorf("%s: %w", f, err)
		}
	}
	return h, nil
}

func (h *history) read(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	client := h.clients
	h.clients++
	calls := map[int64]record{}
	var order []int64
	br := bufio.NewReaderSize(f, 1<<16)
	for {
		line, err := br.ReadBytes('\n')
		if errors.Is(err, io.EOF) {
			// A last line without its newline was cut short by a kill: a
			// call line means the call was never made, a return line that
			// the call's outcome is unknown, as it is left.
			break
		}
		if err != nil {
			return err
		}
		var rec record
		if err := json.Unmarshal(line, &rec); err != nil {
			return fmt.Errorf("bad line %q: %w", line, err)
		}
		switch rec.T {
		case "call":
			calls[rec.ID] = rec
			order = append(order, rec.ID)
		case "ret":
			c, ok := calls[rec.ID]
			if !ok {
				return fmt.Errorf("return of call %d, which was never made", rec.ID)
			}
			delete(calls, rec.ID)
			h.add(client, c, rec.At, *rec.Out)
			if rec.Out.Result == linmodel.Unknown {
				h.noteErr(rec.Err)
			}
		case "job":
			h.jobs = append(h.jobs, rec)
		default:
			return fmt.Errorf("bad record type %q", rec.T)
		}
	}
	// Calls without a return: the process was killed in them.
	for _, id := range order {
		if c, ok := calls[id]; ok {
			h.add(client, c, math.MaxInt64, linmodel.Output{Result: linmodel.Unknown})
			h.noteErr("killed during the call")
		}
	}
	return nil
}

func (h *history) add(client int, call record, ret int64, out linmodel.Output) {
	if out.Result == linmodel.Unknown {
		h.unknown++
		ret = math.MaxInt64 // it may take effect at any time after its call
	}
	h.ops = append(h.ops, porcupine.Operation{ClientId: client, Input: *call.In, Call: call.At, Output: out, Return: ret})
}

func (h *history) noteErr(msg string) {
	if len(h.errs) < 20 || h.errs[msg] > 0 {
		h.errs[msg]++
	}
}
