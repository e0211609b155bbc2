package backendtest

import (
	"fmt"
	"reflect"

	"github.com/chunklock/chunklock/backends"
)

// The model's catalog changes (SPEC §11): every accepted catalog operation
// that changes something records one change, the newest, naming the
// operation and the object; one that changes nothing, or is refused,
// records none.

// countChanges counts the store's catalog changes.
func (h *harness) countChanges() int {
	h.t.Helper()
	n := 0
	f := backends.ChangeFilter{First: backends.MaxChangesPage}
	for {
		page, err := h.b.s.CatalogChanges(h.b.ctx, f)
		if err != nil {
			h.fatalf("catalogChanges: %v", err)
		}
		n += len(page.Changes)
		if !page.HasNextPage {
			return n
		}
		f.After = page.Changes[len(page.Changes)-1].Cursor
	}
}

// expectChange checks the store's catalog changes after an operation
// (what): one more, op on id, when recorded; as many as before otherwise.
func (h *harness) expectChange(what, op, id string, recorded bool) {
	h.t.Helper()
	if recorded {
		h.changes++
		page, err := h.b.s.CatalogChanges(h.b.ctx, backends.ChangeFilter{First: 1})
		if err != nil || len(page.Changes) != 1 {
			h.fatalf("%s: catalogChanges: %v, %d change(s)", what, err, len(page.Changes))
		}
		c := page.Changes[0]
		h.equal(what+": the newest catalog change", op+" "+id, c.Op+" "+c.ID)
	}
	h.equal(what+": the number of catalog changes", h.changes, h.countChanges())
}

// jobChanged tells whether storing b over a changes the job (the store
// compares definitions, times aside).
func jobChanged(a, b mJob) bool {
	return !reflect.DeepEqual(storeJob(&a), storeJob(&b))
}

// poolChange is the expectChange of setting the model pool's slots to n.
func (h *harness) poolChange(n int) {
	h.t.Helper()
	h.expectChange(fmt.Sprintf("upsertPool(%d)", n), "upsertPool", modelPool, h.m.pools[modelPool] != n)
}
