package memory

import (
	"context"
	"time"

	"github.com/chunklock/chunklock/backends"
)

var _ backends.HoldsMarker = (*Backend)(nil)

// HoldsCheckedSince is the zero time for a store this version made (every
// dataset's holds were checked), or when the store was first loaded from
// another (backends.HoldsMarker).
func (b *Backend) HoldsCheckedSince(context.Context) (time.Time, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.loaded, nil
}
