package memory

import (
	"context"
	"fmt"
	"strconv"

	"github.com/chunklock/chunklock/backends"
)

// Catalog changes (backends/changes.go), kept in the order recorded; a
// change's cursor is its position, 1-based, in hexadecimal.

// recordChange records the change ctx carries, if any; the caller holds
// b.mu and has made the change. before, when not nil, is the Before of
// a credential's change.
func (b *Backend) recordChange(ctx context.Context, before []byte) {
	c := backends.ChangeFrom(ctx)
	if c == nil || c.Op == "" {
		return
	}
	rec := *c
	if before != nil {
		rec.Before = before
	}
	rec.Before = append([]byte(nil), rec.Before...)
	if len(rec.Before) == 0 {
		rec.Before = nil
	}
	rec.Cursor = ""
	b.changes = append(b.changes, rec)
}

func (b *Backend) ListChanges(_ context.Context, f backends.ChangeFilter) (backends.ChangePage, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	end := len(b.changes)
	if f.After != "" {
		n, err := strconv.ParseInt(f.After, 16, 64)
		if err != nil || n < 1 || n > int64(len(b.changes)) {
			return backends.ChangePage{}, backends.InvalidArgument("after: not a cursor of a catalog change")
		}
		end = int(n) - 1
	}
	var page backends.ChangePage
	for i := end - 1; i >= 0; i-- {
		c := b.changes[i]
		if !f.Matches(c) {
			continue
		}
		if len(page.Changes) == f.First {
			page.HasNextPage = true
			break
		}
		c.Cursor = fmt.Sprintf("%x", i+1)
		c.Before = append([]byte(nil), c.Before...)
		if len(c.Before) == 0 {
			c.Before = nil
		}
		page.Changes = append(page.Changes, c)
	}
	return page, nil
}
