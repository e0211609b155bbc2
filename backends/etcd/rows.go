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

// rowVal is a status row as stored; the key fields live in the key.
type rowVal struct {
	S backends.Status `json:"s"`
	A int             `json:"a,omitempty"`
	E string          `json:"e,omitempty"`
	T string          `json:"t,omitempty"`
	F int64           `json:"f,omitempty"`
	L int64           `json:"l,omitempty"` // lease end, Unix microseconds
	U int64           `json:"u,omitempty"` // updated, Unix microseconds
	R string          `json:"r,omitempty"`
	P backends.Status `json:"p,omitempty"`
	N backends.Ending `json:"n,omitempty"` // how the claim of T ended
	Y int64           `json:"y,omitempty"` // retry at, Unix microseconds
	M []string        `json:"m,omitempty"` // a mapped claim's reads, each dataset/dataid
}

func micros(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixMicro()
}

func fromMicros(v int64) time.Time {
	if v == 0 {
		return time.Time{}
	}
	return time.UnixMicro(v).UTC()
}

func encodeRow(r backends.StatusRow) []byte {
	v, _ := json.Marshal(rowVal{
		S: r.Status, A: r.Attempt, E: r.Executor, T: r.Token, F: r.Fence, N: r.Ended,
		L: micros(r.LeaseExpiresAt), U: micros(r.UpdatedAt), R: r.Reason, P: r.PrevStatus,
		Y: micros(r.RetryAt), M: encodeReads(r.Reads),
	})
	return v
}

// encodeReads is a claim's reads as stored: dataset/dataid each (neither
// holds a '/'); nil for none.
func encodeReads(reads []backends.Read) []string {
	if reads == nil {
		return nil
	}
	out := make([]string, len(reads))
	for i, r := range reads {
		out[i] = r.Dataset + "/" + r.DataID
	}
	return out
}

func decodeReads(stored []string) []backends.Read {
	if stored == nil {
		return nil
	}
	reads := make([]backends.Read, len(stored))
	for i, s := range stored {
		d, id, _ := strings.Cut(s, "/")
		reads[i] = backends.Read{Dataset: d, DataID: id}
	}
	return reads
}

func decodeRow(k backends.RowKey, val []byte) (backends.StatusRow, error) {
	var v rowVal
	if err := json.Unmarshal(val, &v); err != nil {
		return backends.StatusRow{}, fmt.Errorf("etcd: status row %s/%s/%s/%s is corrupt: %w", k.Dataset, k.DataID, k.Role, k.Job, err)
	}
	return backends.StatusRow{
		RowKey: k, Status: v.S, Attempt: v.A, Executor: v.E, Token: v.T, Fence: v.F, Ended: v.N,
		LeaseExpiresAt: fromMicros(v.L), UpdatedAt: fromMicros(v.U), Reason: v.R, PrevStatus: v.P,
		RetryAt: fromMicros(v.Y), Reads: decodeReads(v.M),
	}, nil
}

// rowKey is rows/<dataset>/<sk>/<role>/<job>, and for the INPUT row of a
// mapped read whose output dataid differs, rows/<dataset>/<sk>/<role>/<job>,<sk
// of the output dataid>: ',' sorts below every character of a job id, so
// the rows of one job stay together and in (job, shortlex read-for) order.
func (b *Backend) rowKey(k backends.RowKey) string {
	return b.key("rows", cursorOf(k))
}

// readForSep separates a job from the read-for dataid in a row key.
const readForSep = ","

// runningKey is running/<dataset>/<sk>/<job>, the live-claim index entry of
// an OUTPUT row.
func (b *Backend) runningKey(k backends.RowKey) string {
	return b.key("running", k.Dataset, backends.SortKey(k.DataID), k.Job)
}

// cursorOf is the listing cursor of a row: its key below rows/.
func cursorOf(k backends.RowKey) string {
	c := k.Dataset + "/" + backends.SortKey(k.DataID) + "/" + string(k.Role) + "/" + k.Job
	if k.ReadFor != "" {
		c += readForSep + backends.SortKey(k.ReadFor)
	}
	return c
}

// parseCursor inverts cursorOf.
func parseCursor(c string) (backends.RowKey, bool) {
	parts := strings.Split(c, "/")
	if len(parts) != 4 {
		return backends.RowKey{}, false
	}
	id, err := backends.DataIDFromSortKey(parts[1])
	if err != nil || (parts[2] != string(backends.RoleInput) && parts[2] != string(backends.RoleOutput)) {
		return backends.RowKey{}, false
	}
	k := backends.RowKey{Dataset: parts[0], DataID: id, Role: backends.Role(parts[2]), Job: parts[3]}
	if job, sk, ok := strings.Cut(parts[3], readForSep); ok {
		readFor, err := backends.DataIDFromSortKey(sk)
		if err != nil {
			return backends.RowKey{}, false
		}
		k.Job, k.ReadFor = job, readFor
	}
	return k, true
}

// parseRowKey reads a full rows/ key.
func (b *Backend) parseRowKey(key string) (backends.RowKey, bool) {
	rest, ok := strings.CutPrefix(key, b.key("rows")+"/")
	if !ok {
		return backends.RowKey{}, false
	}
	return parseCursor(rest)
}

// parseRunningKey reads a full running/ key.
func (b *Backend) parseRunningKey(key string) (backends.RowKey, bool) {
	rest, ok := strings.CutPrefix(key, b.key("running")+"/")
	if !ok {
		return backends.RowKey{}, false
	}
	parts := strings.Split(rest, "/")
	if len(parts) != 3 {
		return backends.RowKey{}, false
	}
	return parseCursor(parts[0] + "/" + parts[1] + "/" + string(backends.RoleOutput) + "/" + parts[2])
}

// ListRows pages through rows in (dataset, shortlex dataid, role, job)
// order. A dataset filter and From/To bound a key range; a filter on
// RUNNING OUTPUT rows reads the live-claim index only. Every page is read at
// one revision.
func (b *Backend) ListRows(ctx context.Context, f backends.ChunkFilter) (backends.ChunkPage, error) {
	l := &rowList{b: b, f: f, running: f.Status == backends.StatusRunning && f.Role == backends.RoleOutput}
	if f.After != "" {
		var ok bool
		if l.after, ok = parseCursor(f.After); !ok {
			return backends.ChunkPage{}, backends.InvalidArgument("chunk cursor %q is not valid; use a cursor from a previous page", f.After)
		}
		l.hasAfter = true
	}
	datasets := []string{f.Dataset}
	if f.Dataset == "" {
		ds, _, err := b.Catalog(ctx)
		if err != nil {
			return backends.ChunkPage{}, err
		}
		datasets = datasets[:0]
		for _, d := range ds {
			datasets = append(datasets, d.ID)
		}
	}
	for _, ds := range datasets {
		if l.hasAfter && ds < l.after.Dataset {
			continue
		}
		from, to := l.bounds(ds)
		if from >= to {
			continue
		}
		full, err := l.scan(ctx, from, to)
		if err != nil {
			return backends.ChunkPage{}, err
		}
		if full {
			break
		}
	}
	return l.page, nil
}

// rowList is a ListRows call in progress.
type rowList struct {
	b        *Backend
	f        backends.ChunkFilter
	running  bool // the filter reads the live-claim index only
	after    backends.RowKey
	hasAfter bool
	rev      int64 // the revision of the page: that of its first read
	page     backends.ChunkPage
}

// bounds is the key range of dataset ds that the filter and the cursor
// leave to read.
func (l *rowList) bounds(ds string) (from, to string) {
	var base string
	if l.running {
		base = l.b.key("running", ds) + "/"
	} else {
		base = l.b.key("rows", ds) + "/"
	}
	from, to = base, clientv3.GetPrefixRangeEnd(base)
	if l.f.From != "" {
		from = base + backends.SortKey(l.f.From) + "/"
	}
	if l.f.To != "" {
		to = base + backends.SortKey(l.f.To) + "0" // '0' follows '/'
	}
	if l.hasAfter && ds == l.after.Dataset {
		var start string
		switch {
		case !l.running:
			start = l.b.rowKey(l.after) + "\x00"
		case l.after.Role == backends.RoleOutput:
			start = l.b.runningKey(l.after) + "\x00"
		default: // INPUT rows come before the OUTPUT rows of the same dataid
			start = base + backends.SortKey(l.after.DataID) + "/"
		}
		from = max(from, start)
	}
	return from, to
}

// scan adds the rows of [from, to) that pass the filter to the page, and
// tells whether the page is full.
func (l *rowList) scan(ctx context.Context, from, to string) (bool, error) {
	const pageSize = 500
	for {
		resp, err := l.b.get(ctx, from, clientv3.WithRange(to), clientv3.WithLimit(pageSize), clientv3.WithRev(l.rev))
		if err != nil {
			return false, err
		}
		if l.rev == 0 {
			l.rev = resp.Header.Revision
		}
		for _, kv := range resp.Kvs {
			if full, err := l.add(kv.Key, kv.Value); full || err != nil {
				return full, err
			}
		}
		if !resp.More || len(resp.Kvs) == 0 {
			return false, nil
		}
		from = string(resp.Kvs[len(resp.Kvs)-1].Key) + "\x00"
	}
}

// add adds the row at key to the page if it passes the filter; true when
// the page is full (HasNextPage) before it.
func (l *rowList) add(key, val []byte) (bool, error) {
	var k backends.RowKey
	var ok bool
	if l.running {
		k, ok = l.b.parseRunningKey(string(key))
	} else {
		k, ok = l.b.parseRowKey(string(key))
	}
	if !ok || (l.f.Job != "" && k.Job != l.f.Job) || (l.f.Role != "" && k.Role != l.f.Role) {
		return false, nil
	}
	r, err := decodeRow(k, val)
	if err != nil {
		return false, err
	}
	if l.f.Status != "" && r.Status != l.f.Status {
		return false, nil
	}
	if len(l.page.Rows) == l.f.First {
		l.page.HasNextPage = true
		return true, nil
	}
	l.page.Rows = append(l.page.Rows, r)
	l.page.Cursors = append(l.page.Cursors, cursorOf(k))
	return false, nil
}

// ExpiredClaims reads the live-claim index (never the history) for OUTPUT
// rows whose lease ended at or before now.
func (b *Backend) ExpiredClaims(ctx context.Context, now time.Time, limit int) ([]backends.RowKey, error) {
	var out []backends.RowKey
	base := b.key("running") + "/"
	err := b.scan(ctx, base, clientv3.GetPrefixRangeEnd(base), 0, func(key, val []byte, _ int64) (bool, error) {
		k, ok := b.parseRunningKey(string(key))
		if !ok {
			return true, nil
		}
		r, err := decodeRow(k, val)
		if err != nil {
			return false, err
		}
		if r.Status == backends.StatusRunning && !now.Before(r.LeaseExpiresAt) {
			out = append(out, k)
		}
		return len(out) < limit, nil
	})
	return out, err
}
