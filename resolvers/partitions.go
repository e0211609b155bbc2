package resolvers

import (
	"time"

	"github.com/chunklock/chunklock/backends"
	"github.com/chunklock/chunklock/graph"
)

// timeOrNull maps the zero time ("no window") to null.
func timeOrNull(t time.Time) *time.Time {
	if t.IsZero() {
		return nil
	}
	return &t
}

// partitionConnection is a page of partitions with opaque cursors ("p:" +
// the dataid). Its endCursor is the store's: it may lie past the last edge
// when the page's scan bound ended it.
func partitionConnection(page backends.PartitionPage) graph.PartitionConnection {
	conn := graph.PartitionConnection{Edges: make([]graph.PartitionEdge, len(page.Partitions))}
	cursors := make([]string, len(page.Partitions))
	for i, p := range page.Partitions {
		cursors[i] = encodeCursor("p", page.Cursors[i])
		conn.Edges[i] = graph.PartitionEdge{Cursor: cursors[i], Node: p}
	}
	conn.PageInfo = pageInfo(cursors, page.HasNextPage)
	if page.EndCursor != "" {
		end := encodeCursor("p", page.EndCursor)
		conn.PageInfo.EndCursor = &end
	}
	return conn
}
