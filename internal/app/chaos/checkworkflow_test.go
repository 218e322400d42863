package chaos

import (
	"slices"
	"testing"
)

// diamondRun is a diamond workflow (id 7) that ran correctly: tasks top
// (job 1), left (2), right (3), bottom (4), each succeeded under fence 1
// with one ledger row, in dependency order.
func diamondRun() wfInput {
	in := wfInput{
		confirmed: []enqueuedWorkflow{{id: 7, shape: shapeDiamond}},
		workflows: []wfRow{{id: 7, name: shapeDiamond, state: "succeeded"}},
		edges:     []wfEdge{{1, 2, 1}, {1, 3, 1}, {2, 4, 1}, {3, 4, 1}},
	}
	for i, name := range []string{"top", "left", "right", "bottom"} {
		job := int64(i + 1)
		in.tasks = append(in.tasks, wfTask{id: job, workflow: 7, name: name, state: "succeeded", succeeded: 1, fence: 1})
		in.ledger = append(in.ledger, wfLedgerRow{id: 10 * job, workflow: 7, job: job, task: name, fence: 1})
	}
	return in
}

// kinds are the anomaly kinds of v, sorted.
func (v wfVerdict) kinds() []string {
	var ks []string
	for _, a := range v.anomalies {
		ks = append(ks, a.kind)
	}
	slices.Sort(ks)
	return ks
}

// TestJudgeWorkflowsAcceptsACorrectRun: a diamond whose rows follow its
// edges, and whose tasks each have one row under their fence, is clean.
func TestJudgeWorkflowsAcceptsACorrectRun(t *testing.T) {
	v := judgeWorkflows(diamondRun())
	if len(v.anomalies) != 0 {
		t.Fatalf("anomalies in a correct run: %v", v.anomalies)
	}
	if v.workflows != 1 || v.succeeded != 1 || v.tasks != 4 || v.edges != 4 || v.shapes[shapeDiamond] != 1 {
		t.Errorf("counts: %+v", v)
	}
}

// TestJudgeWorkflowsFindsEachAnomaly breaks a correct run one way at a
// time and wants exactly the anomalies of that kind.
func TestJudgeWorkflowsFindsEachAnomaly(t *testing.T) {
	for _, c := range []struct {
		name   string
		mutate func(*wfInput)
		want   []string
	}{
		{"a second effect of a task", func(in *wfInput) {
			in.ledger = append(in.ledger, wfLedgerRow{id: 15, workflow: 7, job: 2, task: "left", fence: 2})
		}, []string{anomalyWorkflowEffect}},
		{"a task without its effect", func(in *wfInput) {
			in.ledger = slices.DeleteFunc(in.ledger, func(r wfLedgerRow) bool { return r.job == 3 })
		}, []string{anomalyWorkflowEffect}},
		{"an effect before its dependency's", func(in *wfInput) {
			in.ledger[3].id = 25 // bottom's row, before right's (30)
		}, []string{anomalyWorkflowOrder}},
		{"a dependency's late second effect", func(in *wfInput) {
			in.ledger = append(in.ledger, wfLedgerRow{id: 45, workflow: 7, job: 3, task: "right", fence: 1})
		}, []string{anomalyWorkflowEffect, anomalyWorkflowOrder}},
		{"an effect under a stale fence", func(in *wfInput) {
			in.tasks[1].fence = 2
		}, []string{anomalyWorkflowStale}},
		{"a task left pending", func(in *wfInput) {
			in.workflows[0].state = "running"
			in.tasks[3].state, in.tasks[3].succeeded = "pending", 0
			in.edges[3].status = 0
			in.ledger = in.ledger[:3]
		}, []string{anomalyWorkflowEnd}},
		{"a task the workflow's state hides", func(in *wfInput) {
			in.tasks[2].state = "cancelled"
		}, []string{anomalyWorkflowEffect, anomalyWorkflowEnd}},
		{"an edge between succeeded tasks still waiting", func(in *wfInput) {
			in.edges[0].status = 0
		}, []string{anomalyWorkflowEnd}},
		{"a task missing from the shape", func(in *wfInput) {
			in.tasks, in.ledger, in.edges = in.tasks[:3], in.ledger[:3], in.edges[:2]
		}, []string{anomalyWorkflowShape}},
		{"an edge the shape lacks", func(in *wfInput) {
			in.edges = append(in.edges, wfEdge{2, 3, 1})
		}, []string{anomalyWorkflowShape}},
		{"a split root that has not run", func(in *wfInput) {
			*in = wfInput{workflows: []wfRow{{id: 9, name: shapeSplit, state: "running"}},
				tasks: []wfTask{{id: 1, workflow: 9, name: "root", state: "queued"}}}
		}, []string{anomalyWorkflowEnd}},
		{"a split root that succeeded without its parts", func(in *wfInput) {
			*in = wfInput{workflows: []wfRow{{id: 9, name: shapeSplit, state: "succeeded"}},
				tasks:  []wfTask{{id: 1, workflow: 9, name: "root", state: "succeeded", succeeded: 1, fence: 1}},
				ledger: []wfLedgerRow{{id: 1, workflow: 9, job: 1, task: "root", fence: 1}}}
		}, []string{anomalyWorkflowShape}},
		{"a workflow enqueued and lost", func(in *wfInput) {
			in.confirmed = append(in.confirmed, enqueuedWorkflow{id: 8, shape: shapeChain})
		}, []string{anomalyWorkflowShape}},
		{"a row naming another task", func(in *wfInput) {
			in.ledger[1].task = "right"
		}, []string{anomalyWorkflowEffect}},
	} {
		t.Run(c.name, func(t *testing.T) {
			in := diamondRun()
			c.mutate(&in)
			if got := judgeWorkflows(in).kinds(); !slices.Equal(got, c.want) {
				t.Errorf("anomalies %v, want %v", got, c.want)
			}
		})
	}
}

// TestShapes: every shape's graph is a DAG of the sizes the docs give, and
// a split workflow enqueues its root alone while a fan-out enqueues all of
// the same graph.
func TestShapes(t *testing.T) {
	for shape, size := range map[string]int{shapeChain: 10, shapeDiamond: 4, shapeFanout: 52, shapeSplit: 52} {
		if got := workflowSize(shape); got != size {
			t.Errorf("%s: %d tasks, want %d", shape, got, size)
		}
	}
	g, _ := shapeGraph(shapeSplit)
	if len(g["sink"]) != fanoutParts || len(g["p07"]) != 1 || g["p07"][0] != "root" {
		t.Errorf("split graph: sink after %d, p07 after %v", len(g["sink"]), g["p07"])
	}
}
