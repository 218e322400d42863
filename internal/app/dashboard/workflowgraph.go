package dashboard

import (
	"cmp"
	"fmt"
	"html/template"
	"math"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/fenced/fenced"
)

// The bounds of a drawn workflow graph: whatever the workflow's size, the
// SVG holds at most graphMaxLayers columns of at most graphMaxPerLayer
// boxes and graphMaxEdges edges. What does not fit is drawn as "+N more"
// boxes, and the page says so.
const (
	// graphMaxPerLayer is the boxes of one column, its "+N more" box
	// included.
	graphMaxPerLayer = 16
	// graphMaxLayers is the columns drawn, the last "+N more" column
	// included.
	graphMaxLayers = 24
	// graphMaxEdges is the edges drawn.
	graphMaxEdges = 1000
)

// The geometry of a graph, in SVG user units: tasks flow left to right,
// one column per layer.
const (
	boxW, boxH     = 168, 28
	colGap, rowGap = 56, 10
	graphPad       = 12
	boxChars       = 24 // the characters of a name a box shows
)

// graphBox is one box of the graph: a task, or a "+N more" box standing
// for More tasks of its column (or, in the last column, of every layer
// past the drawn ones).
type graphBox struct {
	Task   *fenced.WorkflowTask // nil for a "+N more" box
	More   int
	Layers int // the layers a last-column "+N more" box stands for; 0 otherwise
	Col    int
	Row    int
	key    float64 // its ordering key within its column
}

// graphEdge is one drawn edge, from a dependency's box to a dependent's:
// N dependencies between the two boxes (more than one where a "+N more"
// box stands for several tasks).
type graphEdge struct {
	From, To *graphBox
	N        int
}

// workflowGraph is the layered drawing of a workflow's tasks.
type workflowGraph struct {
	Cols   [][]*graphBox
	Edges  []graphEdge
	Tasks  int // the workflow's tasks
	Deps   int // its dependencies (edges of the DAG)
	Layers int // its layers: the longest chain of dependencies
	// Hidden is the tasks drawn inside "+N more" boxes, HiddenEdges the
	// edges between boxes left undrawn past graphMaxEdges.
	Hidden, HiddenEdges int
	W, H                int
}

// layers gives each task its layer: 0 without dependencies, else one
// after its deepest dependency (Kahn's order over the dependencies among
// tasks; a dependency on a name that is no task is ignored, and a task on
// or behind a cycle, which a workflow cannot hold, goes after every other).
func layers(tasks []fenced.WorkflowTask, index map[string]int) []int {
	layer := make([]int, len(tasks))
	waiting := make([]int, len(tasks))
	dependents := make([][]int, len(tasks))
	for i, t := range tasks {
		for _, d := range t.DependsOn {
			if j, ok := index[d]; ok && j != i {
				waiting[i]++
				dependents[j] = append(dependents[j], i)
			}
		}
	}
	order := make([]int, 0, len(tasks))
	for i := range tasks {
		if waiting[i] == 0 {
			order = append(order, i)
		}
	}
	deepest := 0
	for k := 0; k < len(order); k++ {
		i := order[k]
		deepest = max(deepest, layer[i])
		for _, d := range dependents[i] {
			layer[d] = max(layer[d], layer[i]+1)
			if waiting[d]--; waiting[d] == 0 {
				order = append(order, d)
			}
		}
	}
	for i := range tasks {
		if waiting[i] > 0 {
			layer[i] = deepest + 1
		}
	}
	return layer
}

// stateRank orders the tasks a crowded column shows first: failed and
// running ones, then queued, cancelled, pending and succeeded.
func stateRank(s fenced.JobState) int {
	switch s {
	case fenced.JobFailed:
		return 0
	case fenced.JobRunning:
		return 1
	case fenced.JobQueued:
		return 2
	case fenced.JobCancelled:
		return 3
	case fenced.JobPending:
		return 4
	}
	return 5
}

// layout draws w's tasks as a layered DAG: each task in the layer after
// its deepest dependency; within a layer, tasks ordered by the mean
// position of their dependencies' boxes (the first layer in id order), so
// edges stay short. A column with more than graphMaxPerLayer tasks shows
// graphMaxPerLayer-1 of them (failed and running ones first, then by that
// order) and a "+N more" box for the rest; past graphMaxLayers-1 layers
// one "+N more" box stands for every later task. Edges join the boxes
// that hold a dependency and its dependent, once per pair of boxes.
func layout(w *fenced.Workflow) *workflowGraph {
	tasks := w.Tasks
	g := &workflowGraph{Tasks: len(tasks)}
	index := make(map[string]int, len(tasks))
	for i, t := range tasks {
		index[t.Name] = i
	}
	layer := layers(tasks, index)
	byLayer := [][]int{}
	for i, l := range layer {
		for len(byLayer) <= l {
			byLayer = append(byLayer, nil)
		}
		byLayer[l] = append(byLayer[l], i)
	}
	g.Layers = len(byLayer)
	box := make([]*graphBox, len(tasks)) // the box that shows each task
	// pos is where a box sits in its column, from 0 to 1.
	pos := func(b *graphBox) float64 {
		return (float64(b.Row) + 0.5) / float64(len(g.Cols[b.Col]))
	}
	for l, members := range byLayer {
		if l == graphMaxLayers-1 && len(byLayer) > graphMaxLayers {
			rest := &graphBox{Col: l, Layers: len(byLayer) - l}
			for _, ls := range byLayer[l:] {
				for _, i := range ls {
					box[i] = rest
					rest.More++
				}
			}
			g.Hidden += rest.More
			g.Cols = append(g.Cols, []*graphBox{rest})
			break
		}
		boxes := make([]*graphBox, len(members))
		for k, i := range members {
			b := &graphBox{Task: &tasks[i], Col: l, key: float64(k)}
			if l > 0 {
				sum, n := 0.0, 0
				for _, d := range tasks[i].DependsOn {
					if j, ok := index[d]; ok && box[j] != nil {
						sum += pos(box[j])
						n++
					}
				}
				if n > 0 {
					b.key = sum / float64(n)
				}
			}
			boxes[k] = b
			box[i] = b
		}
		slices.SortStableFunc(boxes, func(a, b *graphBox) int { return cmp.Compare(a.key, b.key) })
		if len(boxes) > graphMaxPerLayer {
			for k, b := range boxes {
				b.Row = k // the order, to keep among the shown
			}
			shown := slices.Clone(boxes)
			slices.SortStableFunc(shown, func(a, b *graphBox) int {
				return cmp.Compare(stateRank(a.Task.State), stateRank(b.Task.State))
			})
			more := &graphBox{Col: l, More: len(boxes) - (graphMaxPerLayer - 1)}
			for _, b := range shown[graphMaxPerLayer-1:] {
				box[index[b.Task.Name]] = more
			}
			shown = shown[:graphMaxPerLayer-1]
			slices.SortFunc(shown, func(a, b *graphBox) int { return cmp.Compare(a.Row, b.Row) })
			boxes = append(shown, more)
			g.Hidden += more.More
		}
		for k, b := range boxes {
			b.Row = k
		}
		g.Cols = append(g.Cols, boxes)
	}
	g.edges(tasks, index, box)
	g.size()
	return g
}

// edges joins the boxes of each dependency and its dependent, once per
// pair of boxes, in the tasks' order, up to graphMaxEdges.
func (g *workflowGraph) edges(tasks []fenced.WorkflowTask, index map[string]int, box []*graphBox) {
	type pair struct{ from, to *graphBox }
	at := map[pair]int{}
	for i, t := range tasks {
		for _, d := range t.DependsOn {
			j, ok := index[d]
			if !ok {
				continue
			}
			g.Deps++
			p := pair{box[j], box[i]}
			if p.from == p.to {
				continue // both inside the last column's "+N more" box
			}
			if k, seen := at[p]; seen {
				if k >= 0 {
					g.Edges[k].N++
				}
				continue
			}
			if len(g.Edges) == graphMaxEdges {
				at[p] = -1
				g.HiddenEdges++
				continue
			}
			at[p] = len(g.Edges)
			g.Edges = append(g.Edges, graphEdge{From: p.from, To: p.to, N: 1})
		}
	}
}

// size is the SVG's extent: the columns side by side, the tallest one's
// height.
func (g *workflowGraph) size() {
	rows := 0
	for _, c := range g.Cols {
		rows = max(rows, len(c))
	}
	g.W = 2*graphPad + len(g.Cols)*boxW + max(len(g.Cols)-1, 0)*colGap
	g.H = 2*graphPad + rows*boxH + max(rows-1, 0)*rowGap
}

// xy is the top left corner of b: columns are centred vertically.
func (g *workflowGraph) xy(b *graphBox) (x, y int) {
	n := len(g.Cols[b.Col])
	colH := n*boxH + (n-1)*rowGap
	x = graphPad + b.Col*(boxW+colGap)
	y = (g.H-colH)/2 + b.Row*(boxH+rowGap)
	return x, y
}

// stateColors are the fill and stroke of a task's box in each state.
var stateColors = map[fenced.JobState][2]string{
	fenced.JobPending:   {"#f2f4f7", "#98a2b3"},
	fenced.JobQueued:    {"#eff4ff", colorAccent},
	fenced.JobRunning:   {"#fffaeb", colorWarn},
	fenced.JobSucceeded: {"#ecfdf3", colorOK},
	fenced.JobFailed:    {"#fef3f2", colorBad},
	fenced.JobCancelled: {"#eaecf0", "#475467"},
}

// clip shortens s to n characters, with an ellipsis when it was longer.
func clip(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	r := []rune(s)
	return string(r[:n-1]) + "…"
}

// SVG draws the graph: edges as curves from a dependency's right side to
// its dependent's left, under the boxes; each task's box coloured by its
// state, with its name, a tooltip and a link to its job page. Every text
// is escaped; colours and geometry are this package's.
func (g *workflowGraph) SVG() template.HTML {
	var b strings.Builder
	fmt.Fprintf(&b, `<svg class="dag" xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" role="img" aria-label="the workflow's tasks and their dependencies" %s>`,
		g.W, g.H, g.W, g.H, chartFont)
	b.WriteString(`<defs><marker id="arrow" viewBox="0 0 8 8" refX="8" refY="4" markerUnits="userSpaceOnUse" markerWidth="8" markerHeight="8" orient="auto">` +
		`<path d="M0,0 L8,4 L0,8 z" fill="#98a2b3"/></marker></defs>`)
	for _, e := range g.Edges {
		fx, fy := g.xy(e.From)
		tx, ty := g.xy(e.To)
		x1, y1 := fx+boxW, fy+boxH/2
		x2, y2 := tx, ty+boxH/2
		bend := colGap / 2
		// An edge standing for many dependencies is drawn wider, up to
		// four times.
		width := 1.2 * min(1+math.Log10(float64(e.N)), 4)
		fmt.Fprintf(&b, `<path class="edge" data-from="%s" data-to="%s" d="M%d,%d C%d,%d %d,%d %d,%d" fill="none" stroke="#98a2b3" stroke-width="%.1f" marker-end="url(#arrow)">`,
			esc(e.From.label()), esc(e.To.label()), x1, y1, x1+bend, y1, x2-bend, y2, x2, y2, width)
		if e.N > 1 {
			fmt.Fprintf(&b, `<title>%d dependencies</title>`, e.N)
		}
		b.WriteString(`</path>`)
	}
	for _, col := range g.Cols {
		for _, bx := range col {
			x, y := g.xy(bx)
			if t := bx.Task; t != nil {
				c := stateColors[t.State]
				if c[0] == "" {
					c = [2]string{"#fff", colorMuted}
				}
				fmt.Fprintf(&b, `<a class="task" href="/jobs/%d" data-task="%s" data-state="%s"><title>%s · %s · job #%d</title>`,
					t.JobID, esc(t.Name), esc(string(t.State)), esc(t.Name), esc(string(t.State)), t.JobID)
				fmt.Fprintf(&b, `<rect x="%d" y="%d" width="%d" height="%d" rx="5" fill="%s" stroke="%s" stroke-width="1.5"/>`,
					x, y, boxW, boxH, c[0], c[1])
				fmt.Fprintf(&b, `<text x="%d" y="%d" fill="#1d2330">%s</text></a>`, x+8, y+boxH/2+4, esc(clip(t.Name, boxChars)))
				continue
			}
			fmt.Fprintf(&b, `<a class="more" href="#tasks"><title>%s</title>`, esc(bx.label()))
			fmt.Fprintf(&b, `<rect x="%d" y="%d" width="%d" height="%d" rx="5" fill="#fff" stroke="%s" stroke-dasharray="4 3"/>`,
				x, y, boxW, boxH, colorMuted)
			fmt.Fprintf(&b, `<text x="%d" y="%d" fill="%s">%s</text></a>`, x+8, y+boxH/2+4, colorMuted, esc(bx.label()))
		}
	}
	b.WriteString(`</svg>`)
	return template.HTML(b.String())
}

// label names a box: its task's name, or what a "+N more" box holds.
func (b *graphBox) label() string {
	switch {
	case b.Task != nil:
		return b.Task.Name
	case b.Layers > 0:
		return fmt.Sprintf("+%d more in %d layers", b.More, b.Layers)
	}
	return fmt.Sprintf("+%d more", b.More)
}
