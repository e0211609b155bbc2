package resolvers

import (
	"context"
	"encoding/base64"

	"github.com/chunklock/chunklock/backends"
	"github.com/chunklock/chunklock/graph"
)

// changeCursor makes a store's cursor of a catalog change opaque.
func changeCursor(c string) string {
	return base64.RawURLEncoding.EncodeToString([]byte("change:" + c))
}

// decodeChangeCursor reads a cursor changeCursor made; "" for none.
func decodeChangeCursor(after *string) (string, error) {
	if after == nil || *after == "" {
		return "", nil
	}
	b, err := base64.RawURLEncoding.DecodeString(*after)
	if err != nil || len(b) <= len("change:") || string(b[:len("change:")]) != "change:" {
		return "", backends.InvalidArgument("after: %q is not a cursor of catalogChanges", *after)
	}
	return string(b[len("change:"):]), nil
}

// catalogChanges reads one page of the catalog's history as a connection.
func (r *Resolver) catalogChanges(ctx context.Context, f backends.ChangeFilter, after *string) (graph.CatalogChangeConnection, error) {
	var err error
	if f.After, err = decodeChangeCursor(after); err != nil {
		return graph.CatalogChangeConnection{}, err
	}
	page, err := r.store.CatalogChanges(ctx, f)
	if err != nil {
		return graph.CatalogChangeConnection{}, err
	}
	conn := graph.CatalogChangeConnection{Edges: make([]graph.CatalogChangeEdge, len(page.Changes))}
	cursors := make([]string, len(page.Changes))
	for i, c := range page.Changes {
		cursors[i] = changeCursor(c.Cursor)
		conn.Edges[i] = graph.CatalogChangeEdge{Cursor: cursors[i], Node: c}
	}
	conn.PageInfo = pageInfo(cursors, page.HasNextPage)
	return conn, nil
}
