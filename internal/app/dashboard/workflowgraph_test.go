package dashboard

import (
	"fmt"
	"strings"
	"testing"

	"github.com/fenced/fenced"
)

// wf builds a workflow from "name:dep,dep" specs, jobs numbered in order.
func wf(specs ...string) *fenced.Workflow {
	w := &fenced.Workflow{ID: 1}
	for i, s := range specs {
		name, deps, _ := strings.Cut(s, ":")
		t := fenced.WorkflowTask{Name: name, JobID: int64(i + 1), State: fenced.JobPending}
		if deps != "" {
			t.DependsOn = strings.Split(deps, ",")
		}
		w.Tasks = append(w.Tasks, t)
	}
	return w
}

// columns names each column's boxes, top to bottom.
func columns(g *workflowGraph) string {
	var cols []string
	for _, c := range g.Cols {
		var names []string
		for _, b := range c {
			names = append(names, b.label())
		}
		cols = append(cols, strings.Join(names, " "))
	}
	return strings.Join(cols, " | ")
}

// A task goes in the layer after its deepest dependency, not after its
// first one.
func TestLayoutLayersByDeepestDependency(t *testing.T) {
	g := layout(wf("a", "b:a", "c:a", "d:b,c", "e:a,d", "f"))
	if got, want := columns(g), "a f | b c | d | e"; got != want {
		t.Fatalf("columns %q, want %q", got, want)
	}
	if g.Layers != 4 || g.Tasks != 6 || g.Deps != 6 || len(g.Edges) != 6 || g.Hidden != 0 {
		t.Fatalf("layers %d tasks %d deps %d edges %d hidden %d", g.Layers, g.Tasks, g.Deps, len(g.Edges), g.Hidden)
	}
}

// Within a layer, tasks sit by the mean position of their dependencies:
// two chains enqueued crosswise are drawn side by side, without crossing.
func TestLayoutOrdersByTheMeanOfDependencies(t *testing.T) {
	g := layout(wf("top", "bottom", "after-bottom:bottom", "after-top:top", "after-both:top,bottom"))
	if got, want := columns(g), "top bottom | after-top after-both after-bottom"; got != want {
		t.Fatalf("columns %q, want %q", got, want)
	}
}

// A wide layer shows 15 tasks, failed and running first, and a "+N more"
// box, to which the edges of the others go, once per pair of boxes.
func TestLayoutBoundsAWideLayer(t *testing.T) {
	specs := []string{"start"}
	var middle []string
	for i := range 1000 {
		middle = append(middle, fmt.Sprintf("m%d", i))
		specs = append(specs, middle[i]+":start")
	}
	specs = append(specs, "end:"+strings.Join(middle, ","))
	w := wf(specs...)
	w.Tasks[900].State = fenced.JobFailed
	w.Tasks[950].State = fenced.JobRunning
	g := layout(w)
	if len(g.Cols) != 3 || len(g.Cols[1]) != graphMaxPerLayer || g.Hidden != 985 {
		t.Fatalf("columns %d, middle %d boxes, hidden %d", len(g.Cols), len(g.Cols[1]), g.Hidden)
	}
	col := columns(g)
	if !strings.Contains(col, "m899") || !strings.Contains(col, "m949") || !strings.HasSuffix(strings.Split(col, " | ")[1], "+985 more") {
		t.Fatalf("the failed and running tasks or the +985 more box are not drawn: %q", col)
	}
	if g.Deps != 2000 || len(g.Edges) != 32 {
		t.Fatalf("%d dependencies drawn as %d edges, want 2000 as 32", g.Deps, len(g.Edges))
	}
	for _, e := range g.Edges {
		if e.From.Task == nil && e.N != 985 || e.To.Task == nil && e.N != 985 {
			t.Fatalf("an edge of the +N more box stands for %d dependencies", e.N)
		}
	}
	svg := string(g.SVG())
	if n := strings.Count(svg, `<a class="task"`); n != 17 || g.W > 1000 || g.H > 1000 || len(svg) > 32<<10 {
		t.Fatalf("%d task boxes, %d×%d, %d bytes", n, g.W, g.H, len(svg))
	}
}

// A long chain draws 23 layers and one box for the rest.
func TestLayoutBoundsALongChain(t *testing.T) {
	specs := []string{"t0"}
	for i := 1; i < 100; i++ {
		specs = append(specs, fmt.Sprintf("t%d:t%d", i, i-1))
	}
	g := layout(wf(specs...))
	if len(g.Cols) != graphMaxLayers || g.Layers != 100 || g.Hidden != 77 {
		t.Fatalf("%d columns of %d layers, %d hidden", len(g.Cols), g.Layers, g.Hidden)
	}
	last := g.Cols[len(g.Cols)-1]
	if len(last) != 1 || last[0].label() != "+77 more in 77 layers" || len(g.Edges) != graphMaxLayers-1 {
		t.Fatalf("last column %q, %d edges", columns(g), len(g.Edges))
	}
}

// Names are escaped and clipped; every box links its job.
func TestGraphSVGEscapes(t *testing.T) {
	w := wf(`<b>"x"</b>`, "a-very-long-task-name-that-goes-on-and-on:"+`<b>"x"</b>`)
	w.Tasks[0].State = fenced.JobSucceeded
	svg := string(layout(w).SVG())
	if strings.Contains(svg, "<b>") || !strings.Contains(svg, "&lt;b&gt;&#34;x&#34;&lt;/b&gt;") ||
		!strings.Contains(svg, `href="/jobs/2"`) || !strings.Contains(svg, ">a-very-long-task-name-t…<") {
		t.Fatalf("svg:\n%s", svg)
	}
}
