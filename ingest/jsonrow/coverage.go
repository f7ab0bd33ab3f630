package jsonrow

import (
	"slices"

	"github.com/tarnhq/tarn/ingest/codec"
)

// coverage keeps what [Decoder.Coverage] reports. An Append notes what it
// finds as pending and commit makes it count, so that a record that
// fails halfway counts for nothing, like its row.
type coverage struct {
	rows int64
	// By field id (depth-first order of the target's struct fields):
	// the name path, the id of the enclosing field (-1 at the top) and
	// whether an appended row carried a value.
	paths   []string
	parents []int
	carried []bool
	// nodes are the plan's structs, whose unmatched keys are reported.
	nodes []*structNode
	// unmatchedCount is the number of keys in the nodes' unmatched sets,
	// at most codec.MaxUnmatched.
	unmatchedCount int

	newCarried   []int
	newUnmatched []nodeKey
}

type nodeKey struct {
	n   *structNode
	key string
}

// declare adds a field and returns its id.
func (c *coverage) declare(path string, parent int) int {
	c.paths = append(c.paths, path)
	c.parents = append(c.parents, parent)
	c.carried = append(c.carried, false)

	return len(c.paths) - 1
}

// begin starts an Append, forgetting what a failed one noted.
func (c *coverage) begin() {
	c.newCarried = c.newCarried[:0]
	c.newUnmatched = c.newUnmatched[:0]
}

// filled notes that field id carries a value in the row being read.
func (c *coverage) filled(id int) {
	if !c.carried[id] {
		c.newCarried = append(c.newCarried, id)
	}
}

// unmatched notes that key of an object of struct n matches no field.
func (c *coverage) unmatched(n *structNode, key string) {
	if c.unmatchedCount+len(c.newUnmatched) < codec.MaxUnmatched {
		c.newUnmatched = append(c.newUnmatched, nodeKey{n, key})
	}
}

// commit counts what the Append that just succeeded noted.
func (c *coverage) commit() {
	c.rows++
	for _, id := range c.newCarried {
		c.carried[id] = true
	}
	for _, nk := range c.newUnmatched {
		if !nk.n.unmatched[nk.key] && c.unmatchedCount < codec.MaxUnmatched {
			nk.n.unmatched[nk.key] = true
			c.unmatchedCount++
		}
	}
}

func (c *coverage) report() codec.Coverage {
	r := codec.Coverage{Rows: c.rows}
	if c.rows == 0 {
		return r
	}
	for id, p := range c.paths {
		if !c.carried[id] && (c.parents[id] < 0 || c.carried[c.parents[id]]) {
			r.Unfilled = append(r.Unfilled, p)
		}
	}
	for _, n := range c.nodes {
		for k := range n.unmatched {
			r.Unmatched = append(r.Unmatched, codec.JoinPath(n.path, k))
		}
	}
	slices.Sort(r.Unmatched)

	return r
}
