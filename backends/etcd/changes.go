package etcd

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/chunklock/chunklock/backends"
)

// Catalog changes (backends/changes.go) live under changes/<time>/<random>,
// <time> the change's time in microseconds, 16 hexadecimal digits, so that
// keys sort by time; each is written in the Txn of its change, and listed
// in the order of those Txns (ListChanges).

// changeVal is a change as stored: short names keep each entry small.
type changeVal struct {
	Ac string          `json:"a"`
	T  int64           `json:"t"`
	K  string          `json:"k"`
	ID string          `json:"i"`
	Op string          `json:"o"`
	D  string          `json:"d,omitempty"`
	J  string          `json:"j,omitempty"`
	B  json.RawMessage `json:"b,omitempty"`
}

// changeKey is the key of a change made at t.
func (b *Backend) changeKey(t time.Time) string {
	return b.key("changes", fmt.Sprintf("%016x", t.UnixMicro()), randomID())
}

func encodeChange(c backends.CatalogChange) []byte {
	v, _ := json.Marshal(changeVal{Ac: c.Actor, T: c.Time.UnixMicro(), K: c.Kind, ID: c.ID, Op: c.Op, D: c.Dataset, J: c.Job, B: c.Before})
	return v
}

func decodeChange(v []byte) (backends.CatalogChange, error) {
	var s changeVal
	if err := json.Unmarshal(v, &s); err != nil {
		return backends.CatalogChange{}, fmt.Errorf("etcd: a catalog change is corrupt: %w", err)
	}
	c := backends.CatalogChange{Actor: s.Ac, Time: time.UnixMicro(s.T).UTC(), Kind: s.K, ID: s.ID, Op: s.Op, Dataset: s.D, Job: s.J}
	if len(s.B) > 0 {
		c.Before = []byte(s.B)
	}
	return c, nil
}

// change returns the key and value of the change ctx carries, with
// before for a credential's; ok is false when there is none.
func (b *Backend) change(ctx context.Context, before []byte) (key string, val []byte, ok bool) {
	c := backends.ChangeFrom(ctx)
	if c == nil || c.Op == "" {
		return "", nil, false
	}
	rec := *c
	if before != nil {
		rec.Before = before
	}
	return b.changeKey(rec.Time), encodeChange(rec), true
}

// changeOps are the writes recording the change ctx carries, if any.
func (b *Backend) changeOps(ctx context.Context, before []byte) []clientv3.Op {
	key, val, ok := b.change(ctx, before)
	if !ok {
		return nil
	}
	return []clientv3.Op{clientv3.OpPut(key, string(val))}
}

// changesBatch is how many changes ListChanges reads per request.
const changesBatch = 256

// ListChanges reads the changes newest first by creation revision: each
// key is written once, by the Txn of its change (one change a Txn), so its
// create revision is the change's commit revision, unique and growing with
// commit order. A change's cursor is that revision. etcd sorts a range by
// revision in full before it limits: a page reads every change key, which
// catalog changes, made by people and pipelines files, keep few.
func (b *Backend) ListChanges(ctx context.Context, f backends.ChangeFilter) (backends.ChangePage, error) {
	prefix := b.key("changes") + "/"
	var below int64 // read changes created before this revision; 0: all
	if f.After != "" {
		n, err := strconv.ParseInt(f.After, 10, 64)
		if err != nil || n < 2 {
			return backends.ChangePage{}, backends.InvalidArgument("after: not a cursor of a catalog change")
		}
		below = n
	}
	var page backends.ChangePage
	for {
		opts := []clientv3.OpOption{clientv3.WithPrefix(), clientv3.WithSort(clientv3.SortByCreateRevision, clientv3.SortDescend), clientv3.WithLimit(changesBatch)}
		if below > 0 {
			opts = append(opts, clientv3.WithMaxCreateRev(below-1))
		}
		resp, err := b.get(ctx, prefix, opts...)
		if err != nil {
			return backends.ChangePage{}, err
		}
		for _, kv := range resp.Kvs {
			c, err := decodeChange(kv.Value)
			if err != nil {
				return backends.ChangePage{}, err
			}
			if !f.Matches(c) {
				continue
			}
			if len(page.Changes) == f.First {
				page.HasNextPage = true
				return page, nil
			}
			c.Cursor = strconv.FormatInt(kv.CreateRevision, 10)
			page.Changes = append(page.Changes, c)
		}
		if !resp.More || len(resp.Kvs) == 0 {
			return page, nil
		}
		below = resp.Kvs[len(resp.Kvs)-1].CreateRevision
	}
}

// loadChange stores a loaded change in a Txn of its own: its create
// revision orders it after the changes loaded before it.
func (b *Backend) loadChange(ctx context.Context, c backends.CatalogChange) error {
	_, err := b.txn(ctx, nil, []clientv3.Op{clientv3.OpPut(b.changeKey(c.Time), string(encodeChange(c)))}, nil)
	return mapErr(err, "load catalog changes")
}

// dumpChanges dumps the changes oldest first, in the order ListChanges
// lists them.
func (b *Backend) dumpChanges(ctx context.Context, fn func(backends.DumpItem) error) error {
	var cs []backends.CatalogChange
	f := backends.ChangeFilter{First: backends.MaxChangesPage}
	for {
		page, err := b.ListChanges(ctx, f)
		if err != nil {
			return err
		}
		cs = append(cs, page.Changes...)
		if !page.HasNextPage {
			break
		}
		f.After = page.Changes[len(page.Changes)-1].Cursor
	}
	for i := len(cs) - 1; i >= 0; i-- {
		c := cs[i]
		c.Cursor = ""
		if err := fn(backends.DumpItem{Change: &c}); err != nil {
			return err
		}
	}
	return nil
}
