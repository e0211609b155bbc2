package resolvers

import (
	"context"
	"encoding/base64"
	"github.com/chunklock/chunklock/backends/partition"
	"slices"
	"strconv"
	"strings"

	"github.com/chunklock/chunklock/backends"
	"github.com/chunklock/chunklock/graph"
)

// Cursors are opaque to clients: base64url of a kind prefix and the store's
// own position ("c:" + the store's row cursor, "e:" + an event sequence).
func encodeCursor(kind, pos string) string {
	return base64.RawURLEncoding.EncodeToString([]byte(kind + ":" + pos))
}

func decodeCursor(kind, cursor string) (string, error) {
	raw, err := base64.RawURLEncoding.DecodeString(cursor)
	pos, ok := strings.CutPrefix(string(raw), kind+":")
	if err != nil || !ok {
		return "", backends.InvalidArgument("cursor %q is not a cursor of this listing; pass an endCursor or cursor it returned", cursor)
	}
	return pos, nil
}

func nullIfEmpty(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

// pageSize checks a requested page size; nil means the default.
func pageSize(first *int) (int, error) {
	if first == nil {
		return backends.DefaultPageSize, nil
	}
	if *first < 1 || *first > backends.MaxPageSize {
		return 0, backends.InvalidArgument("first must be between 1 and %d, got %d", backends.MaxPageSize, *first)
	}
	return *first, nil
}

// statusFilter checks a status filter: NONE names no row, so it filters
// nothing that exists.
func statusFilter(s *backends.Status) (backends.Status, error) {
	if s != nil && *s == backends.StatusNone {
		return "", backends.InvalidArgument("status NONE matches no row; omit status to list rows of every status")
	}
	return deref(s), nil
}

func pageInfo(cursors []string, hasNext bool) graph.PageInfo {
	pi := graph.PageInfo{HasNextPage: hasNext}
	if len(cursors) > 0 {
		pi.StartCursor, pi.EndCursor = &cursors[0], &cursors[len(cursors)-1]
	}
	return pi
}

func (r *Resolver) chunks(ctx context.Context, f backends.ChunkFilter, after *string) (graph.ChunkConnection, error) {
	if after != nil {
		pos, err := decodeCursor("c", *after)
		if err != nil {
			return graph.ChunkConnection{}, err
		}
		f.After = pos
	}
	page, err := r.store.Chunks(ctx, f)
	if err != nil {
		return graph.ChunkConnection{}, err
	}
	conn := graph.ChunkConnection{Edges: make([]graph.ChunkEdge, len(page.Rows))}
	cursors := make([]string, len(page.Rows))
	for i, row := range page.Rows {
		cursors[i] = encodeCursor("c", page.Cursors[i])
		conn.Edges[i] = graph.ChunkEdge{Cursor: cursors[i], Node: row}
	}
	conn.PageInfo = pageInfo(cursors, page.HasNextPage)
	return conn, nil
}

// maxSliceScan bounds the rows a page of chunks with a slice looks at.
const maxSliceScan = 10 * backends.MaxPageSize

// slicedChunks is a page of the rows of f's dataset, which has dimensions,
// whose tuples' values of the dimensions sliced are listed: the rows are
// read in pages and kept by their tuples, at most maxSliceScan rows a
// request; a page that stops there may hold fewer rows than asked, its
// endCursor where the scan stopped and hasNextPage true.
func (r *Resolver) slicedChunks(ctx context.Context, f backends.ChunkFilter, after *string, slice []partition.Slice) (graph.ChunkConnection, error) {
	if f.Dataset == "" {
		return graph.ChunkConnection{}, backends.InvalidArgument("slice keeps the rows of one dataset with dimensions: give dataset")
	}
	ds, err := r.store.Dataset(ctx, f.Dataset)
	if err != nil {
		return graph.ChunkConnection{}, err
	}
	var def partition.Def
	if ds.Partitions != nil {
		def = *ds.Partitions
	}
	if _, _, err := def.Sliced(slice); err != nil {
		return graph.ChunkConnection{}, backends.InvalidArgument("%v", err)
	}
	at := make([]int, len(slice))
	for i, sl := range slice {
		at[i] = slices.IndexFunc(def.Dimensions, func(d partition.Dimension) bool { return d.Name == sl.Dimension })
	}
	keep := func(id string) bool {
		values, ok := def.SplitDataID(id)
		if !ok {
			return false
		}
		for i, sl := range slice {
			if !slices.Contains(sl.Values, values[at[i]]) {
				return false
			}
		}
		return true
	}
	if after != nil {
		if f.After, err = decodeCursor("c", *after); err != nil {
			return graph.ChunkConnection{}, err
		}
	}
	want := f.First
	f.First = backends.MaxPageSize
	var conn graph.ChunkConnection
	var cursors []string
	end, more := "", false
	for scanned := 0; ; {
		page, err := r.store.Chunks(ctx, f)
		if err != nil {
			return graph.ChunkConnection{}, err
		}
		for i, row := range page.Rows {
			end = encodeCursor("c", page.Cursors[i])
			if keep(row.DataID) {
				cursors = append(cursors, end)
				conn.Edges = append(conn.Edges, graph.ChunkEdge{Cursor: end, Node: row})
				if len(conn.Edges) == want {
					more = i < len(page.Rows)-1 || page.HasNextPage
					break
				}
			}
		}
		scanned += len(page.Rows)
		if len(conn.Edges) == want || !page.HasNextPage || len(page.Rows) == 0 {
			break
		}
		if scanned >= maxSliceScan {
			more = true
			break
		}
		f.After = page.Cursors[len(page.Cursors)-1]
	}
	conn.PageInfo = pageInfo(cursors, more)
	if end != "" {
		conn.PageInfo.EndCursor = &end // where the scan stopped: rows after the last kept may have been looked at
	}
	return conn, nil
}

func eventCursor(seq int64) string { return encodeCursor("e", strconv.FormatInt(seq, 10)) }

func decodeEventCursor(cursor *string) (int64, error) {
	if cursor == nil {
		return 0, nil
	}
	pos, err := decodeCursor("e", *cursor)
	if err != nil {
		return 0, err
	}
	seq, err := strconv.ParseInt(pos, 10, 64)
	if err != nil || seq < 0 {
		return 0, backends.InvalidArgument("cursor %q is not an event cursor; pass an endCursor or cursor it returned", *cursor)
	}
	return seq, nil
}

// rangeResult answers a range operation: null with the error when it
// failed (the error says how far it got), so that a failing alias leaves
// the others' answers.
func rangeResult(res backends.RangeResult, err error) (*backends.RangeResult, error) {
	if err != nil {
		return nil, err
	}
	return &res, nil
}
