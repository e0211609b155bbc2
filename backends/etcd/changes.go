package etcd

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/chunklock/chunklock/backends"
)

// Catalog changes (backends/changes.go) live under changes/<time>/<random>,
// <time> the change's time in microseconds, 16 hexadecimal digits, so that
// keys sort by time; each is written in the Txn of its change. A change's
// cursor is its key after changes/.

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

func (b *Backend) ListChanges(ctx context.Context, f backends.ChangeFilter) (backends.ChangePage, error) {
	prefix := b.key("changes") + "/"
	end := clientv3.GetPrefixRangeEnd(prefix)
	if f.After != "" {
		if strings.Count(f.After, "/") != 1 {
			return backends.ChangePage{}, backends.InvalidArgument("after: not a cursor of a catalog change")
		}
		end = prefix + f.After
	}
	var page backends.ChangePage
	for {
		rc, cancel := b.rctx(ctx)
		resp, err := b.cli.Get(rc, prefix, clientv3.WithRange(end), clientv3.WithSort(clientv3.SortByKey, clientv3.SortDescend), clientv3.WithLimit(changesBatch))
		cancel()
		if err != nil {
			return backends.ChangePage{}, mapErr(err, "read catalog changes")
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
			c.Cursor = strings.TrimPrefix(string(kv.Key), prefix)
			page.Changes = append(page.Changes, c)
		}
		if !resp.More || len(resp.Kvs) == 0 {
			return page, nil
		}
		end = string(resp.Kvs[len(resp.Kvs)-1].Key)
	}
}
