package resolvers

import (
	"context"

	"github.com/chunklock/chunklock/backends"
	"github.com/chunklock/chunklock/graph"
)

func (r *Resolver) events(ctx context.Context, f backends.EventFilter, after *string) (graph.EventConnection, error) {
	var err error
	if f.After, err = decodeEventCursor(after); err != nil {
		return graph.EventConnection{}, err
	}
	page, err := r.store.Events(ctx, f)
	if err != nil {
		return graph.EventConnection{}, err
	}
	conn := graph.EventConnection{Edges: make([]graph.EventEdge, len(page.Events))}
	cursors := make([]string, len(page.Events))
	for i, e := range page.Events {
		cursors[i] = eventCursor(e.Seq)
		conn.Edges[i] = graph.EventEdge{Cursor: cursors[i], Node: e}
	}
	conn.PageInfo = pageInfo(cursors, page.HasNextPage)
	return conn, nil
}

// watchEvents streams the store's change feed: events committed by any
// server sharing the store, from now on or, with a cursor, from the event
// after it. Filters naming an unknown dataset or job are refused rather than
// left to wait forever.
func (r *Resolver) watchEvents(ctx context.Context, f backends.EventFilter, after *string) (<-chan backends.Event, error) {
	var err error
	if f.After, err = decodeEventCursor(after); err != nil {
		return nil, err
	}
	if f.Dataset != "" {
		if _, err := r.store.Dataset(ctx, f.Dataset); err != nil {
			return nil, err
		}
	}
	if f.Job != "" {
		if _, err := r.store.Job(ctx, f.Job); err != nil {
			return nil, err
		}
	}
	if after == nil {
		if f.After, err = r.lastEventSeq(ctx, f); err != nil {
			return nil, err
		}
	}
	return r.store.WatchEvents(ctx, f)
}

// lastEventSeq returns the Seq of the last event matching f recorded so far
// (0 when there is none), so that a watch without a cursor starts at the
// present. The Store has no direct read of the log's head, so this pages
// through the matching events, MaxPageSize at a time.
func (r *Resolver) lastEventSeq(ctx context.Context, f backends.EventFilter) (int64, error) {
	f.First = backends.MaxPageSize
	for {
		page, err := r.store.Events(ctx, f)
		if err != nil {
			return 0, err
		}
		if n := len(page.Events); n > 0 {
			f.After = page.Events[n-1].Seq
		}
		if !page.HasNextPage || len(page.Events) == 0 {
			return f.After, nil
		}
	}
}
