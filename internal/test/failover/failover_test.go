// Package failover_test runs fenced's failover scenario: the chaos workload
// against a PostgreSQL primary and standby under pg_auto_failover
// (scripts/ha-cluster), across a promotion. See docs/operations.md.
package failover_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/fenced/fenced/internal/app/chaos"
)

// TestMain lets this test binary act as the chaos worker process.
func TestMain(m *testing.M) {
	if len(os.Args) > 1 && os.Args[1] == "chaos-worker" {
		os.Exit(chaos.WorkerMain(os.Args[2:]))
	}
	os.Exit(m.Run())
}

// logWriter sends progress lines to the test log.
type logWriter struct{ t *testing.T }

func (w logWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

// haScript is the repository's HA cluster script.
var haScript, _ = filepath.Abs("../../../scripts/ha-cluster")

// haCluster starts a primary and a standby under pg_auto_failover on ports
// from port (scripts/ha-cluster, which installs the package when missing)
// and returns the cluster's directory and multi-host URL; the cluster is
// stopped and removed when the test ends. Outside CI it skips when it
// cannot run: not root, or pg_autoctl not installed.
func haCluster(t *testing.T, mode string, port int) (dir, url string) {
	t.Helper()
	ci := os.Getenv("CI") == "true"
	if os.Geteuid() != 0 {
		if ci {
			t.Fatal("the failover scenario runs as root (it starts PostgreSQL as postgres)")
		}
		t.Skip("the failover scenario runs as root")
	}
	if _, err := exec.LookPath("pg_autoctl"); err != nil && !ci {
		t.Skip("pg_autoctl is not installed (apt-get install postgresql-15-auto-failover, or run .ci/run)")
	}
	tmp, err := os.MkdirTemp("", "fenced-ha-")
	if err != nil {
		t.Fatal(err)
	}
	os.Remove(tmp) // the script creates it, owned by postgres
	env := append(os.Environ(), "FENCED_HA_PORT="+strconv.Itoa(port))
	stop := func() {
		cmd := exec.Command(haScript, "stop", tmp)
		cmd.Env = env
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Errorf("stop the cluster: %v\n%s", err, out)
		}
	}
	t.Cleanup(stop)
	start := time.Now()
	cmd := exec.Command(haScript, "start", tmp, mode)
	cmd.Env = env
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("start the %s cluster: %v\n%s", mode, err, out)
	}
	t.Logf("%s cluster up in %s", mode, time.Since(start).Round(time.Second))
	return tmp, strings.TrimSpace(string(out))
}

// ha runs a command of the HA cluster script on the cluster in dir and
// returns its output.
func ha(t *testing.T, dir string, args ...string) string {
	t.Helper()
	out, err := exec.Command(haScript, append([]string{args[0], dir}, args[1:]...)...).CombinedOutput()
	if err != nil {
		t.Fatalf("ha-cluster %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return strings.TrimSpace(string(out))
}

// runChaos runs the chaos workload for d against url with failover
// halfway, logs its report, and fails t unless the failover happened.
func runChaos(t *testing.T, url string, d time.Duration, failover []string, checkTimeout time.Duration) *chaos.Report {
	t.Helper()
	o := chaos.DefaultOptions()
	o.URL, o.Log = url, logWriter{t}
	o.Duration = d
	o.Failover = failover
	o.CheckTimeout = checkTimeout
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	rep, err := chaos.Run(ctx, o)
	if err != nil {
		t.Fatal(err)
	}
	var table strings.Builder
	rep.WriteTable(&table)
	t.Log("\n" + table.String())
	if rep.Failovers != 1 {
		t.Fatalf("failovers: %d, want 1 (%v)", rep.Failovers, rep.Anomalies)
	}
	return rep
}

// lagAtKill is how far behind the standby was when the primary was killed,
// in bytes of WAL, as scripts/ha-cluster kill-primary recorded it.
type lagAtKill struct {
	unreceived   int64 // written by the primary, never received by the standby: lost with the primary
	unreplayed   int64 // received and flushed by the standby, not yet replayed: the promotion replays it
	replayPaused bool
}

func readLag(t *testing.T, dir string) lagAtKill {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, "lag-at-kill"))
	if err != nil {
		t.Fatalf("the standby's lag at the kill: %v", err)
	}
	var l lagAtKill
	var paused string
	if _, err := fmt.Sscanf(strings.TrimSpace(string(b)), "unreceived=%d unreplayed=%d replay_paused=%s", &l.unreceived, &l.unreplayed, &paused); err != nil {
		t.Fatalf("the standby's lag at the kill, %q: %v", b, err)
	}
	l.replayPaused = paused == "t"
	t.Logf("when the primary was killed the standby lacked %d bytes of its WAL and had %d bytes it had not replayed (replay paused: %t)",
		l.unreceived, l.unreplayed, l.replayPaused)
	return l
}

// laggingFailover prepares the failover of the cluster in dir so that the
// standby is behind the primary when it dies, both ways: its replay is
// paused from now on (it applies nothing of the load; the promotion must
// replay all of it), and its WAL receiver is stopped 3 s before the kill
// and killed with the primary, so it never receives what the primary wrote
// meanwhile. It returns the failover command.
func laggingFailover(t *testing.T, dir string) []string {
	t.Helper()
	ha(t, dir, "pause-replay")
	return []string{haScript, "kill-primary", dir, "3"}
}

// wantLagged fails t unless the standby was behind both ways at the kill.
func wantLagged(t *testing.T, dir string) {
	t.Helper()
	l := readLag(t, dir)
	if l.unreceived <= 0 || l.unreplayed <= 0 || !l.replayPaused {
		t.Errorf("the standby was not behind the primary both ways when it died: %+v", l)
	}
}

// wantWorkAfter fails t unless jobs were enqueued, claimed and completed
// and leases granted after the failover, before the faulty phase ended.
func wantWorkAfter(t *testing.T, rep *chaos.Report) {
	t.Helper()
	w := rep.AfterFailover
	if w == nil || w.Enqueued == 0 || w.Claimed == 0 || w.Completed == 0 || w.Grants == 0 {
		t.Errorf("work after the failover, before the faulty phase ended: %v; want some of each", w)
	}
}

// wantFaultsDuring fails t unless the nemesis went on injecting faults
// while the failover ran.
func wantFaultsDuring(t *testing.T, rep *chaos.Report) {
	t.Helper()
	n := 0
	for _, c := range rep.FaultsDuringFailover {
		n += c
	}
	if n == 0 {
		t.Errorf("no fault was injected while the failover ran (%.1f s from its command to the first write)", rep.ResumeSeconds)
	}
}

// TestFailoverSynchronous is the failover scenario with synchronous
// replication: the chaos workload (workers, leases, resource writes,
// job-fenced business writes, pauses, kills, connection kills) runs against
// the cluster's multi-host URL; the standby's replay is paused throughout,
// and halfway its WAL receiver is stopped for 3 s, then the primary's keeper
// and PostgreSQL are killed with SIGKILL (the receiver with them) and
// pg_auto_failover promotes the standby; the load and the other faults go
// on meanwhile and against the new primary. The faults are the asynchronous
// scenario's: there they lose acknowledged commits (the primary commits
// what the standby never receives). Here a commit waits for the standby to
// flush it, so what the standby never received was never acknowledged, and
// what it received but had not replayed the promotion replays. Every
// checker must pass: no acknowledged grant or completion is lost, no fence
// is granted twice; and the new primary did real work in the faulty phase.
func TestFailoverSynchronous(t *testing.T) {
	if testing.Short() {
		t.Skip("-short")
	}
	dir, url := haCluster(t, "sync", 6540)
	// Long enough for load on the new primary after a slow promotion: the
	// failover command starts at 45 s, and the first write on the new
	// primary came 20–22 s after that on the test machine (the command
	// stops the standby's receiver for 3 s before the kill).
	rep := runChaos(t, url, 90*time.Second, laggingFailover(t, dir), 0)
	wantLagged(t, dir)
	if rep.AnomalyCount != 0 {
		t.Errorf("%d anomalies across a synchronous failover", rep.AnomalyCount)
	}
	if rep.TimelineAfter <= rep.TimelineBefore {
		t.Errorf("timeline %d before the failover, %d after: the standby was not promoted", rep.TimelineBefore, rep.TimelineAfter)
	}
	wantFaultsDuring(t, rep)
	wantWorkAfter(t, rep)
}

// TestFailoverStandbyDown: the standby of a synchronous pair is killed
// halfway and stays down. pg_auto_failover has the primary go on alone
// (wait_primary) and empties its synchronous_standby_names: the commits
// that waited for the standby complete, and later ones are acknowledged by
// the primary alone. fenced goes on on that one server and every checker
// must pass: nothing is lost or granted twice while the primary keeps its
// data. No promotion happens (the timeline stays), work goes on after the
// kill, the nemesis goes on meanwhile; once the standby is started again it
// catches up and commits wait for it again.
func TestFailoverStandbyDown(t *testing.T) {
	if testing.Short() {
		t.Skip("-short")
	}
	dir, url := haCluster(t, "sync", 6545)
	standby := "node1"
	if ha(t, dir, "primary") == "node1" {
		standby = "node2"
	}
	if names := ha(t, dir, "sync-names"); names == "" {
		t.Fatalf("the primary's commits wait for no standby before the standby went down")
	}
	rep := runChaos(t, url, 60*time.Second, []string{haScript, "kill-standby", dir}, 0)
	if rep.AnomalyCount != 0 {
		t.Errorf("%d anomalies with the standby down", rep.AnomalyCount)
	}
	if rep.TimelineAfter != rep.TimelineBefore {
		t.Errorf("timeline %d before the standby went down, %d after: a promotion, with no standby to promote", rep.TimelineBefore, rep.TimelineAfter)
	}
	t.Logf("writes waited %.1f s for the dead standby before the primary went on alone", rep.ResumeSeconds)
	// The faults come at random, on average one every 1.5 s or so; a wait
	// as short as the 1.7 s seen once may see none by chance, and the run
	// has then still shown that nothing is lost.
	if rep.ResumeSeconds >= 5 {
		wantFaultsDuring(t, rep)
	} else {
		t.Logf("the wait was too short to require a fault during it: %v", rep.FaultsDuringFailover)
	}
	wantWorkAfter(t, rep)
	if st := ha(t, dir, "primary-state"); st != "wait_primary" {
		t.Errorf("the primary is in state %q with its standby down, want wait_primary", st)
	}
	if names := ha(t, dir, "sync-names"); names != "" {
		t.Errorf("with the standby down the primary's synchronous_standby_names is %q, want ''", names)
	}
	ha(t, dir, "start-node", standby)
	ha(t, dir, "wait-ready")
	if names := ha(t, dir, "sync-names"); names == "" {
		t.Errorf("the standby is back and caught up, yet the primary's commits wait for no standby")
	}
}

// asyncRun is one run of the asynchronous scenario, with the synchronous
// scenario's faults: the standby's replay paused, its WAL receiver stopped
// for 3 s before the primary is killed, so the promoted standby lacks the
// last commits the clients were told of.
func asyncRun(t *testing.T, port int, urlParams string) *chaos.Report {
	t.Helper()
	dir, url := haCluster(t, "async", port)
	// Lost commits make the history non-linearizable, and its many unknown
	// outcomes make proving it slow: a short check is enough to say so.
	rep := runChaos(t, url+urlParams, 60*time.Second, laggingFailover(t, dir), 20*time.Second)
	wantLagged(t, dir)
	if rep.Dir != "" {
		os.RemoveAll(rep.Dir) // the anomalies were expected; the cluster goes with the test
	}
	return rep
}

// fenceAnomalies counts the anomalies that say a fence was granted twice:
// a lease fence to two owners (or going down), a job fence to two workers,
// attempt fences not increasing.
func fenceAnomalies(rep *chaos.Report) int {
	return rep.AnomalyKinds["lease-fence"] + rep.AnomalyKinds["job-fence"] + rep.AnomalyKinds["attempt-fence"]
}

// TestFailoverAsynchronousGrantsAFenceTwice shows the hazard: promoted
// without the commits that granted them, the standby grants the same
// fences again, and the checkers catch a fence granted twice.
//
// A promotion does not always lose a grant: in one CI run of about six the
// checkers found nothing missing at all, not even an acknowledged enqueue,
// so that promotion had lost no commit. The scenario therefore runs up to
// asyncTries times, each on a cluster of its own, and the hazard must show
// in one of them.
func TestFailoverAsynchronousGrantsAFenceTwice(t *testing.T) {
	if testing.Short() {
		t.Skip("-short")
	}
	for try := 1; try <= asyncTries; try++ {
		var rep *chaos.Report
		t.Run(fmt.Sprintf("run%d", try), func(t *testing.T) { rep = asyncRun(t, 6550, "") })
		if t.Failed() {
			return
		}
		if fenceAnomalies(rep) > 0 {
			return
		}
		t.Logf("run %d: no fence granted twice (anomalies: %v)", try, rep.AnomalyKinds)
	}
	t.Fatalf("%d asynchronous promotions granted no fence twice", asyncTries)
}

// asyncTries is how many runs TestFailoverAsynchronousGrantsAFenceTwice
// makes at most to see a lost grant granted again.
const asyncTries = 3

// TestFailoverAsynchronousWithAdvanceGrantsNoFenceTwice: the same scenario
// with fenced_promotion_advance: every client's first connection to the
// promoted standby finds a new timeline and advances fences past any lost
// grant, so no fence is granted twice. What the lost commits wrote is still
// lost (the checkers report the acknowledged writes that are missing): only
// synchronous replication keeps them.
func TestFailoverAsynchronousWithAdvanceGrantsNoFenceTwice(t *testing.T) {
	if testing.Short() {
		t.Skip("-short")
	}
	rep := asyncRun(t, 6560, "&fenced_promotion_advance=1000000")
	if n := fenceAnomalies(rep); n != 0 {
		t.Fatalf("%d fences granted twice despite the advance on promotion (anomalies: %v)", n, rep.AnomalyKinds)
	}
}
