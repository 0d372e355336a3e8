package report

import (
	"math"
	"sort"

	"github.com/ctprof/ctprof/internal/analysis"
)

// The flame graph is an icicle of the sampled stacks: the root at the top,
// each frame as wide as the samples that passed through it. Laying it out
// and dropping frames too narrow to see is presentation; the counts are the
// Aggregator's.

// flameView is one selectable flame graph (all threads, blocked, one
// lock's waiters…).
type flameView struct {
	ID    string `json:"id"`
	Label string `json:"label"`
	Total int    `json:"total"`
	// Nodes are [x0, x1, depth, name index, samples, flags]; flags bit 0
	// marks a frame where most samples were BLOCKED.
	Nodes [][6]int `json:"nodes"`
	Depth int      `json:"depth"`
	// Unit names what the widths count; empty means thread samples.
	Unit string `json:"unit,omitempty"`
	// Change, in a differential view (ctprof diff), is each node's share
	// of the after run's samples minus its share of the before run's, in
	// the order of Nodes; Side says which run the widths are ("before" or
	// "after"). Absent in a report.
	Change []float64 `json:"change,omitempty"`
	Side   string    `json:"side,omitempty"`
}

// minFrameShare prunes frames narrower than this share of the view; they
// are summed into one "(other)" frame per parent, so totals stay right.
const minFrameShare = 0.001

// maxFlameNodes caps one view's frames, whatever the stacks: a report must
// stay small enough to attach to a ticket.
const maxFlameNodes = 20000

type flameNode struct {
	name     string
	count    int
	blocked  int
	children map[string]*flameNode
	// change is the differential view's share change (flameView.Change).
	change float64
}

func (n *flameNode) child(name string) *flameNode {
	if n.children == nil {
		n.children = map[string]*flameNode{}
	}
	c := n.children[name]
	if c == nil {
		c = &flameNode{name: name}
		n.children[name] = c
	}
	return c
}

// flameNames interns frame names shared by all views.
type flameNames struct {
	index map[string]int
	list  []string
}

func (f *flameNames) id(s string) int {
	if i, ok := f.index[s]; ok {
		return i
	}
	i := len(f.list)
	f.index[s] = i
	f.list = append(f.list, s)
	return i
}

// buildFlameView lays out the stacks weighted by weight (0 leaves a stack
// out).
func buildFlameView(id, label string, stacks []*analysis.FoldedStack, weight func(*analysis.FoldedStack) (count, blocked int), names *flameNames) flameView {
	return layoutView(id, label, buildFlameTree(stacks, weight), names, false)
}

// buildFlameTree sums the stacks, weighted by weight, into one tree.
func buildFlameTree(stacks []*analysis.FoldedStack, weight func(*analysis.FoldedStack) (count, blocked int)) *flameNode {
	root := &flameNode{name: "all"}
	for _, st := range stacks {
		c, b := weight(st)
		if c <= 0 {
			continue
		}
		root.count += c
		root.blocked += b
		n := root
		for _, f := range st.Frames {
			n = n.child(f)
			n.count += c
			n.blocked += b
		}
	}
	return root
}

// layoutView lays out a tree as a view; diff carries each node's change.
func layoutView(id, label string, root *flameNode, names *flameNames, diff bool) flameView {
	v := flameView{ID: id, Label: label, Total: root.count}
	if root.count == 0 {
		return v
	}
	share := minFrameShare
	for {
		v.Nodes = v.Nodes[:0]
		v.Depth = 0
		if diff {
			v.Change = []float64{}
		}
		layout(root, 0, 0, int(share*float64(root.count)+0.5), names, &v)
		if len(v.Nodes) <= maxFlameNodes {
			return v
		}
		share *= 2
	}
}

// layout places n at x with its children side by side under it, widest
// first (so the eye finds the big ones), and prunes the narrow ones.
func layout(n *flameNode, x, depth, minCount int, names *flameNames, v *flameView) {
	flags := 0
	if 2*n.blocked > n.count {
		flags |= 1
	}
	v.Nodes = append(v.Nodes, [6]int{x, x + n.count, depth, names.id(n.name), n.count, flags})
	if v.Change != nil {
		v.Change = append(v.Change, math.Round(n.change*1e5)/1e5)
	}
	v.Depth = max(v.Depth, depth+1)
	kids := make([]*flameNode, 0, len(n.children))
	for _, c := range n.children {
		kids = append(kids, c)
	}
	sort.Slice(kids, func(i, j int) bool {
		if kids[i].count != kids[j].count {
			return kids[i].count > kids[j].count
		}
		return kids[i].name < kids[j].name
	})
	cx := x
	other := &flameNode{name: "(other)"}
	for _, c := range kids {
		if c.count < minCount {
			other.count += c.count
			other.blocked += c.blocked
			other.change += c.change
			continue
		}
		layout(c, cx, depth+1, minCount, names, v)
		cx += c.count
	}
	if other.count > 0 {
		layout(other, cx, depth+1, minCount, names, v)
	}
}

// flameData holds every view and the shared names.
type flameData struct {
	Names []string    `json:"names"`
	Views []flameView `json:"views"`
}

// maxLockViews bounds the per-lock views to the hottest locks.
const maxLockViews = 5

// buildFlame builds the views of the report: all threads, by state, and
// the waiters of the hottest locks.
func buildFlame(s *analysis.Summary, stacks []*analysis.FoldedStack) *flameData {
	if len(stacks) == 0 {
		return nil
	}
	names := &flameNames{index: map[string]int{}}
	blockedOf := func(st *analysis.FoldedStack) int { return st.InState("BLOCKED") }
	byState := func(states ...string) func(*analysis.FoldedStack) (int, int) {
		return func(st *analysis.FoldedStack) (count, blocked int) {
			for _, state := range states {
				count += st.InState(state)
				if state == "BLOCKED" {
					blocked += st.InState(state)
				}
			}
			return count, blocked
		}
	}
	fd := &flameData{}
	add := func(v flameView) {
		if v.Total > 0 {
			fd.Views = append(fd.Views, v)
		}
	}
	add(buildFlameView("all", "All threads", stacks, func(st *analysis.FoldedStack) (int, int) { return st.Count, blockedOf(st) }, names))
	add(buildFlameView("blocked", "Blocked (on a monitor)", stacks, byState("BLOCKED"), names))
	add(buildFlameView("waiting", "Waiting and timed waiting", stacks, byState("WAITING", "TIMED_WAITING"), names))
	add(buildFlameView("runnable", "Runnable", stacks, byState("RUNNABLE"), names))
	lockViews := 0
	for _, l := range s.Locks {
		if lockViews == maxLockViews {
			break
		}
		if l.Kind == "futex" {
			continue // native waits have no Java stacks
		}
		lockViews++
		id := l.ID
		add(buildFlameView("lock:"+id, "Waiters of "+analysis.LockName(l), stacks, func(st *analysis.FoldedStack) (int, int) {
			c := st.ByLock[id]
			return c, min(c, blockedOf(st))
		}, names))
	}
	fd.Names = names.list
	return fd
}
