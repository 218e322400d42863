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

	"github.com/fenced/fenced/internal/chaos"
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
var haScript, _ = filepath.Abs("../../scripts/ha-cluster")

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

// TestFailoverSynchronous is the failover scenario with synchronous
// replication: the chaos workload (workers, leases, resource writes,
// job-fenced business writes, pauses, kills, connection kills) runs against
// the cluster's multi-host URL; halfway, the primary's keeper and
// PostgreSQL are killed with SIGKILL and pg_auto_failover promotes the
// standby; the load goes on against the new primary. Every checker must
// pass: no acknowledged grant or completion is lost, no fence is granted
// twice.
func TestFailoverSynchronous(t *testing.T) {
	if testing.Short() {
		t.Skip("-short")
	}
	dir, url := haCluster(t, "sync", 6540)
	o := chaos.DefaultOptions()
	o.URL, o.Log = url, logWriter{t}
	o.Duration = 45 * time.Second // the failover halfway, then load on the new primary
	o.Failover = []string{haScript, "kill-primary", dir}
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
		t.Fatalf("failovers: %d, want 1", rep.Failovers)
	}
	if rep.AnomalyCount != 0 {
		t.Fatalf("%d anomalies across a synchronous failover", rep.AnomalyCount)
	}
	if rep.Jobs == 0 || rep.Succeeded == 0 || rep.Grants == 0 {
		t.Errorf("workload: %d jobs, %d succeeded, %d grants", rep.Jobs, rep.Succeeded, rep.Grants)
	}
}

// asyncRun is one run of the asynchronous scenario: the standby's WAL
// receiver is stopped for a few seconds before the primary is killed, so
// the promoted standby lacks the last commits the clients were told of.
func asyncRun(t *testing.T, port int, urlParams string) *chaos.Report {
	t.Helper()
	dir, url := haCluster(t, "async", port)
	o := chaos.DefaultOptions()
	o.URL, o.Log = url+urlParams, logWriter{t}
	o.Duration = 45 * time.Second
	o.Failover = []string{haScript, "kill-primary", dir, "3"}
	// Lost commits make the history non-linearizable, and its many unknown
	// outcomes make proving it slow: a short check is enough to say so.
	o.CheckTimeout = 20 * time.Second
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	rep, err := chaos.Run(ctx, o)
	if err != nil {
		t.Fatal(err)
	}
	var table strings.Builder
	rep.WriteTable(&table)
	t.Log("\n" + table.String())
	if rep.Dir != "" {
		os.RemoveAll(rep.Dir) // the anomalies were expected; the cluster goes with the test
	}
	if rep.Failovers != 1 {
		t.Fatalf("failovers: %d, want 1", rep.Failovers)
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
