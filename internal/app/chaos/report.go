package chaos

import (
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
)

// maxAnomalies is how many anomalies a report lists; the count is exact.
const maxAnomalies = 50

// Report is the outcome of a chaos run: what ran, what was injected, and
// what the checkers found.
type Report struct {
	Backend   string  `json:"backend"` // postgres, mysql or sqlite
	Workload  string  `json:"workload"`
	Seed      uint64  `json:"seed"`
	Seconds   float64 `json:"duration_s"` // the faulty phase
	Workers   int     `json:"workers"`    // worker processes at any time
	Processes int     `json:"processes"`  // worker processes started, replacements included

	Enqueued  int64 `json:"enqueued"` // jobs the enqueuer was told were inserted
	Jobs      int64 `json:"jobs"`     // jobs in the database
	Succeeded int64 `json:"succeeded"`
	Failed    int64 `json:"failed"`
	Attempts  int64 `json:"attempts"` // attempts in the jobs' histories

	Operations    int            `json:"operations"` // lease and resource calls plus job attempt writes
	LeaseOps      int            `json:"lease_ops"`
	JobWrites     int            `json:"job_writes"`
	Grants        int            `json:"lease_grants"`
	Unknown       int            `json:"unknown_outcomes"`
	UnknownCauses map[string]int `json:"unknown_causes,omitempty"`

	Pauses    int `json:"pauses"`
	Kills     int `json:"kills"`
	ConnKills int `json:"connection_kills"`
	Stalls    int `json:"write_lock_stalls"` // SQLite's stand-in for connection kills
	Restarts  int `json:"restarts"`
	// Failovers is 1 when the failover command ran (the primary killed and
	// the standby promoted, or the standby killed) and a write succeeded
	// after it; ResumeSeconds the time from the command's start to that
	// first write.
	Failovers     int     `json:"failovers"`
	ResumeSeconds float64 `json:"failover_resume_s"`
	// The server's timeline before the failover command and after that
	// first write (a promotion starts a new one; 0: not read).
	TimelineBefore int64 `json:"timeline_before,omitempty"`
	TimelineAfter  int64 `json:"timeline_after,omitempty"`
	// FaultsDuringFailover are the faults injected while the failover ran,
	// from its command's start to that first write, by kind.
	FaultsDuringFailover map[string]int `json:"faults_during_failover,omitempty"`
	// AfterFailover is the work done after that first write until the end
	// of the faulty phase, by the database clock: on the new primary.
	AfterFailover *Work `json:"after_failover,omitempty"`
	FaultsMissed  int   `json:"faults_missed"`       // scheduled faults with no target at the time
	Crashes       int   `json:"crashes"`             // workers that exited on their own
	Deliberate    int   `json:"deliberate_failures"` // attempts the workload failed on purpose

	// The keyed workload's ledger: attempts in it, those of them with no
	// END row, and the most attempts of one key whose intervals
	// overlapped, by the key's limit.
	KeyedAttempts int            `json:"keyed_attempts,omitempty"`
	KeyedUnended  int            `json:"keyed_attempts_without_end,omitempty"`
	KeyedPeak     map[string]int `json:"keyed_peak_overlap,omitempty"`

	// The workflow workload: workflows in the database, by shape, and
	// those that ended succeeded; their tasks, those of them added at run
	// time (a split workflow's parts), and the dependency edges whose
	// order the checker verified.
	Workflows          int            `json:"workflows,omitempty"`
	WorkflowShapes     map[string]int `json:"workflow_shapes,omitempty"`
	WorkflowsSucceeded int            `json:"workflows_succeeded,omitempty"`
	WorkflowTasks      int            `json:"workflow_tasks,omitempty"`
	WorkflowTasksAdded int            `json:"workflow_tasks_added,omitempty"`
	WorkflowEdges      int            `json:"workflow_edges,omitempty"`

	StaleRejected int            `json:"stale_writes_rejected"`
	Stale         map[string]int `json:"stale_by_kind"`

	Linearizable string         `json:"linearizable"` // ok, illegal, unknown
	CheckSeconds float64        `json:"check_s"`
	AnomalyCount int            `json:"anomaly_count"`
	AnomalyKinds map[string]int `json:"anomaly_kinds,omitempty"` // by checker
	Anomalies    []string       `json:"anomalies"`
	Reproduce    string         `json:"reproduce"`
	Dir          string         `json:"dir,omitempty"`    // kept when there are anomalies
	Schema       string         `json:"schema,omitempty"` // kept when there are anomalies: the schema, database or file
}

// Kinds of anomaly, by the checker that found it.
const (
	anomalyCrash      = "crash"           // a worker process exited on its own
	anomalyNemesis    = "nemesis"         // a fault asked for could not be injected (the restart)
	anomalyDrain      = "drain"           // jobs still unfinished after the drain
	anomalyLin        = "linearizability" // the lease and resource history
	anomalyLeaseFence = "lease-fence"     // a fence granted twice or going down
	anomalyJobLost    = "job-lost"        // an enqueued job missing, or an effect without its job
	anomalyJobEnd     = "job-end"         // a job not succeeded or failed, or failed for no reason
	anomalyJobEffect  = "job-effect"      // effects not exactly one, or under another fence
	anomalyJobTold    = "job-told"        // a worker's outcome contradicted by the final state
	anomalyNotFound   = "not-found"       // a refusal as not found instead of stale
	anomalyCounter    = "counter"         // a counter not equal to its ledger, a lost update
	anomalyAttempt    = "attempt-fence"   // attempt fences not increasing
	anomalyJobFence   = "job-fence"       // one job's fence used by two worker processes
	anomalyKeyOverlap = "key-overlap"     // more attempts of a key overlapped than its limit
	anomalyKeyLate    = "key-late-write"  // an attempt wrote after a later one took its key's last slot
	anomalyKeyedRow   = "keyed-row"       // a keyed ledger row off its job's key, or an END without its effect

	anomalyWorkflowShape  = "workflow-shape"  // a workflow missing, or its tasks or edges not its shape's
	anomalyWorkflowEnd    = "workflow-end"    // a workflow or task not succeeded, an edge not done
	anomalyWorkflowEffect = "workflow-effect" // a task's effects not exactly one, or a row off its task
	anomalyWorkflowStale  = "workflow-stale"  // a task's effect written under a fence it did not succeed under
	anomalyWorkflowOrder  = "workflow-order"  // a task's effect before a dependency's
)

func (r *Report) anomaly(kind, format string, args ...any) {
	if r.AnomalyKinds == nil {
		r.AnomalyKinds = map[string]int{}
	}
	r.AnomalyKinds[kind]++
	r.AnomalyCount++
	if len(r.Anomalies) < maxAnomalies {
		r.Anomalies = append(r.Anomalies, fmt.Sprintf(format, args...))
	}
}

// JSON is the report as indented JSON.
func (r *Report) JSON() []byte {
	b, _ := json.MarshalIndent(r, "", "  ")
	return append(b, '\n')
}

// WriteTable prints the report as a table.
func (r *Report) WriteTable(w io.Writer) {
	row := func(k string, v any) { fmt.Fprintln(w, strings.TrimRight(fmt.Sprintf("  %-26s %v", k, v), " ")) }
	fmt.Fprintln(w, "== chaos run")
	if r.Backend != "" {
		row("backend", r.Backend)
	}
	if r.Workload != "" {
		row("workload", r.Workload)
	}
	row("seed", r.Seed)
	row("duration (faulty phase)", fmt.Sprintf("%.1fs", r.Seconds))
	row("worker processes", fmt.Sprintf("%d at a time, %d started", r.Workers, r.Processes))
	row("jobs", fmt.Sprintf("%d (%d succeeded, %d failed), %d attempts", r.Jobs, r.Succeeded, r.Failed, r.Attempts))
	if r.KeyedAttempts > 0 {
		row("keyed attempts", fmt.Sprintf("%d (%d without END), peak overlap on a key %s", r.KeyedAttempts, r.KeyedUnended, kinds(r.KeyedPeak)))
	}
	if r.Workflows > 0 {
		row("workflows", fmt.Sprintf("%d (%s), %d succeeded", r.Workflows, workflowShapeCounts(r.WorkflowShapes), r.WorkflowsSucceeded))
		row("workflow tasks", fmt.Sprintf("%d (%d added at run time), %d edges checked in order", r.WorkflowTasks, r.WorkflowTasksAdded, r.WorkflowEdges))
	}
	row("operations", fmt.Sprintf("%d (%d lease/resource calls, %d job attempt writes)", r.Operations, r.LeaseOps, r.JobWrites))
	row("unknown outcomes", r.Unknown)
	row("pauses past the TTL", r.Pauses)
	row("kills", r.Kills)
	if r.Backend == "sqlite" {
		row("write-lock stalls", r.Stalls)
	} else {
		row("connection kills", r.ConnKills)
	}
	if r.Backend == "postgres" {
		row("PostgreSQL restarts", r.Restarts)
	}
	if r.Failovers > 0 {
		row("failovers", fmt.Sprintf("%d (first write %.1fs after the command began; timeline %d, then %d)",
			r.Failovers, r.ResumeSeconds, r.TimelineBefore, r.TimelineAfter))
		row("faults while failing over", tally(r.FaultsDuringFailover))
	}
	if r.AfterFailover != nil {
		row("work after the failover", r.AfterFailover.String()+" (by the database clock, up to the end of the faulty phase)")
	}
	row("worker crashes", r.Crashes)
	if r.FaultsMissed > 0 {
		row("faults skipped", fmt.Sprintf("%d (no target then, e.g. half the workers paused, or an error)", r.FaultsMissed))
	}
	row("stale writes rejected", fmt.Sprintf("%d %s", r.StaleRejected, kinds(r.Stale)))
	row("linearizability", fmt.Sprintf("%s (%.1fs)", r.Linearizable, r.CheckSeconds))
	row("anomalies", fmt.Sprintf("%d %s", r.AnomalyCount, kinds(r.AnomalyKinds)))
	for _, a := range r.Anomalies {
		fmt.Fprintf(w, "    - %s\n", a)
	}
	if r.AnomalyCount > len(r.Anomalies) {
		fmt.Fprintf(w, "    … and %d more\n", r.AnomalyCount-len(r.Anomalies))
	}
	row("reproduce", r.Reproduce)
	if r.Dir != "" {
		row("evidence kept in", fmt.Sprintf("%s and %s", r.Dir, r.Schema))
	}
}

// kinds is tally(m) in parentheses, or "" when m is empty.
func kinds(m map[string]int) string {
	if len(m) == 0 {
		return ""
	}
	return "(" + tally(m) + ")"
}

// tally prints counts by name for people, sorted by name: "conn-kill 16,
// kill 3, pause 11", or "none" when m is empty.
func tally[K ~string](m map[K]int) string {
	if len(m) == 0 {
		return "none"
	}
	parts := make([]string, 0, len(m))
	for _, k := range slices.Sorted(maps.Keys(m)) {
		parts = append(parts, fmt.Sprintf("%s %d", k, m[k]))
	}
	return strings.Join(parts, ", ")
}

// byName is m keyed by plain strings, as the report holds counts.
func byName[K ~string](m map[K]int) map[string]int {
	out := make(map[string]int, len(m))
	for k, v := range m {
		out[string(k)] = v
	}
	return out
}
