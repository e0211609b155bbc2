package etcd

import (
	"context"
	"encoding/json"
	"errors"
	"math/rand/v2"
	"sort"
	"strconv"
	"time"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/chunklock/chunklock/backends"
)

// tx is one attempt of Backend.Update: reads at one snapshot revision,
// remembered for the commit's guard, and buffered writes.
type tx struct {
	b          *Backend
	attempt    int
	rev        int64            // snapshot revision; 0 until the first read
	reads      map[string]int64 // key -> ModRevision read (0: missing)
	writes     map[string]*[]byte
	events     []backends.Event
	dropped    map[string]bool     // candidates dropped by this transaction
	running    map[string]bool     // OUTPUT rows read in RUNNING
	candJob    string              // job whose candidates this transaction read
	prefetched map[string]prefetch // values read ahead at the snapshot, not yet tracked
	reserved   reservedSet         // candidates this attempt holds (batch.go)
	aheadNext  []string            // keys the next read fetches ahead (PrefetchSlots)
	ranges     []string            // key prefixes listed (ListReads): no key below them may change
}

// prefetch is a value read at the snapshot before anyone asked for it.
type prefetch struct {
	val []byte
	rev int64
}

// maxEventsPerTxn bounds events per transaction: Seq keeps 16 bits for the
// index within the commit.
const maxEventsPerTxn = 1 << 16

// Update runs fn on a snapshot and commits its writes in one etcd Txn
// guarded by every key fn read; on conflict fn runs again on fresh data.
func (b *Backend) Update(ctx context.Context, fn func(backends.Tx) error) error {
	for attempt := 0; ; attempt++ {
		if b.closed.Load() {
			return backends.Unavailable(nil, "etcd store is closed")
		}
		if err := ctx.Err(); err != nil {
			return unavailable(err, "request ended before its transaction committed")
		}
		t := &tx{b: b, attempt: attempt, reads: map[string]int64{}, writes: map[string]*[]byte{}, dropped: map[string]bool{}, running: map[string]bool{}, prefetched: map[string]prefetch{}}
		ok, err := b.attempt(ctx, t, fn)
		if err != nil && !errors.Is(err, rpctypes.ErrCompacted) {
			return err
		}
		// A snapshot compacted away while the attempt read from it is a
		// lost race too: the next attempt reads a fresh one.
		if ok && err == nil {
			b.commits.Add(1)
			if len(t.events) > 0 {
				select {
				case b.kick <- struct{}{}:
				default:
				}
			}
			return nil
		}
		b.conflicts.Add(1)
		// Lost a race: back off a little, more after repeated losses, with
		// jitter so that racers spread out.
		if attempt >= 2 {
			d := time.Duration(rand.Int64N(int64(time.Millisecond) << min(attempt-2, 5)))
			select {
			case <-time.After(d):
			case <-ctx.Done():
			}
		}
	}
}

// attempt runs fn once and commits what it wrote; ok is false when the
// commit lost a race. The candidates it reserved are free again when it
// ends.
func (b *Backend) attempt(ctx context.Context, t *tx, fn func(backends.Tx) error) (bool, error) {
	defer t.releaseReserved()
	if err := fn(t); err != nil {
		return false, err
	}
	if key, val, ok := b.change(ctx, nil); ok {
		t.write(key, val)
	}
	if len(t.writes) == 0 && len(t.events) == 0 {
		return true, nil // read-only: its snapshot is consistent as it is
	}
	return b.commit(ctx, t)
}

// commit applies t's writes if nothing it read changed. It reports false
// when the guard failed (or the commit provably did not happen), so that
// Update runs fn again.
func (b *Backend) commit(ctx context.Context, t *tx) (bool, error) {
	if len(t.events) > maxEventsPerTxn {
		return false, errors.New("etcd: a transaction recorded too many events")
	}
	lease, err := b.leaseID(ctx)
	if err != nil {
		return false, err
	}
	id := randomID()
	marker := b.key("txn", id)
	cmps := make([]clientv3.Cmp, 0, len(t.reads)+1)
	cmps = append(cmps, clientv3.Compare(clientv3.CreateRevision(marker), "=", 0))
	readKeys := make([]string, 0, len(t.reads))
	for k := range t.reads {
		readKeys = append(readKeys, k)
	}
	sort.Strings(readKeys)
	for _, k := range readKeys {
		if rev := t.reads[k]; rev == 0 {
			cmps = append(cmps, clientv3.Compare(clientv3.CreateRevision(k), "=", 0))
		} else {
			cmps = append(cmps, clientv3.Compare(clientv3.ModRevision(k), "=", rev))
		}
	}
	for _, p := range t.ranges {
		// Every key below p is older than the snapshot: none was added or
		// changed since it was listed (a deleted one fails its own guard).
		cmps = append(cmps, clientv3.Compare(clientv3.ModRevision(p).WithPrefix(), "<", t.rev+1))
	}
	writeKeys := make([]string, 0, len(t.writes))
	for k := range t.writes {
		writeKeys = append(writeKeys, k)
	}
	sort.Strings(writeKeys)
	ops := make([]clientv3.Op, 0, len(t.writes)+2)
	for _, k := range writeKeys {
		if v := t.writes[k]; v == nil {
			ops = append(ops, clientv3.OpDelete(k))
		} else {
			ops = append(ops, clientv3.OpPut(k, string(*v)))
		}
	}
	if len(t.events) > 0 {
		vals := make([]eventVal, len(t.events))
		for i, e := range t.events {
			vals[i] = toEventVal(e)
		}
		data, err := json.Marshal(vals)
		if err != nil {
			return false, err
		}
		ops = append(ops, clientv3.OpPut(b.key("evq", id), string(data)))
	}
	ops = append(ops, clientv3.OpPut(marker, "c", clientv3.WithLease(lease)))
	if b.closed.Load() {
		return false, backends.Unavailable(nil, "etcd store is closed")
	}
	rc, cancel := b.rctx(ctx)
	resp, err := b.cli.Txn(rc).If(cmps...).Then(ops...).Commit()
	cancel()
	if err == nil {
		return resp.Succeeded, nil
	}
	if errors.Is(err, rpctypes.ErrLeaseNotFound) {
		b.dropLease(lease) // expired while unused; the commit did not happen
		return false, nil
	}
	if !unknownOutcome(err) {
		return false, mapErr(err, "commit transaction")
	}
	return b.resolve(ctx, marker, lease, err)
}

// resolve learns whether the commit that writes marker happened, and makes
// sure that it cannot happen any more if it has not: it creates marker
// itself when marker is still missing. It retries until ResolveTimeout,
// even past ctx, since a caller is better served by the truth.
func (b *Backend) resolve(ctx context.Context, marker string, lease clientv3.LeaseID, cause error) (bool, error) {
	b.resolved.Add(1)
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), b.cfg.ResolveTimeout)
	defer cancel()
	wait := 50 * time.Millisecond
	for {
		if b.closed.Load() {
			return false, unavailable(cause, "etcd store closed before the outcome of a commit was known; check the result and retry")
		}
		qc, qcancel := context.WithTimeout(rctx, b.cfg.RequestTimeout)
		resp, err := b.cli.Txn(qc).
			If(clientv3.Compare(clientv3.CreateRevision(marker), "=", 0)).
			Then(clientv3.OpPut(marker, "a", clientv3.WithLease(lease))).
			Else(clientv3.OpGet(marker)).
			Commit()
		qcancel()
		if err == nil {
			if resp.Succeeded {
				return false, nil // fenced off: the commit never happened
			}
			kvs := resp.Responses[0].GetResponseRange().Kvs
			applied := len(kvs) == 1 && string(kvs[0].Value) == "c"
			if applied {
				b.resolvedApplied.Add(1)
			}
			return applied, nil
		}
		if errors.Is(err, rpctypes.ErrLeaseNotFound) {
			// The lease ended, and with it the markers; the commit used
			// the same lease, so etcd refused it unless it came first.
			b.dropLease(lease)
			return false, unavailable(cause, "etcd lost the outcome of a commit (its lease expired); check the result and retry")
		}
		select {
		case <-rctx.Done():
			return false, unavailable(cause, "etcd did not confirm a commit, its outcome is unknown; check the result and retry")
		case <-time.After(wait):
		}
		wait = min(wait*2, time.Second)
	}
}

// read returns the values of keys at the snapshot, tracking each for the
// commit's guard; a buffered write of this transaction wins. extra keys are
// read in the same round trip but tracked only once asked for.
func (t *tx) read(ctx context.Context, keys []string, extra ...string) ([][]byte, error) {
	out := make([][]byte, len(keys))
	var missing []string
	var idx []int // position in out, -1 for an extra key
	for i, k := range keys {
		if w, ok := t.writes[k]; ok {
			if w != nil {
				out[i] = *w
			}
			continue
		}
		if p, ok := t.prefetched[k]; ok {
			t.reads[k] = p.rev
			delete(t.prefetched, k)
			out[i] = p.val
			continue
		}
		if rev, ok := t.reads[k]; ok && rev == 0 {
			continue // read before: missing
		}
		missing = append(missing, k)
		idx = append(idx, i)
	}
	if len(missing) == 0 {
		return out, nil
	}
	// The engine asks every transaction for the catalog version after its
	// reads (CatalogVersion): fetch it with the first of them.
	extra = append(extra, t.b.catalogVersionKey())
	extra = append(extra, t.aheadNext...)
	t.aheadNext = nil
	for _, k := range extra {
		_, w := t.writes[k]
		_, r := t.reads[k]
		_, p := t.prefetched[k]
		if !w && !r && !p {
			missing = append(missing, k)
			idx = append(idx, -1)
		}
	}
	batch := min(64, t.b.cfg.MaxTxnOps)
	for len(missing) > 0 {
		n := min(batch, len(missing))
		ops := make([]clientv3.Op, n)
		for j, k := range missing[:n] {
			ops[j] = clientv3.OpGet(k, clientv3.WithRev(t.rev))
		}
		resp, err := t.b.txn(ctx, nil, ops, nil)
		if err != nil {
			return nil, mapErr(err, "read rows")
		}
		if t.rev == 0 {
			t.rev = resp.Header.Revision
		}
		for j, k := range missing[:n] {
			var val []byte
			var rev int64
			if kvs := resp.Responses[j].GetResponseRange().Kvs; len(kvs) > 0 {
				val, rev = kvs[0].Value, kvs[0].ModRevision
			}
			if i := idx[j]; i >= 0 {
				t.reads[k] = rev
				out[i] = val
			} else {
				t.prefetched[k] = prefetch{val: val, rev: rev}
			}
		}
		missing, idx = missing[n:], idx[n:]
	}
	return out, nil
}

func (t *tx) write(key string, val []byte) { t.writes[key] = &val }
func (t *tx) del(key string)               { t.writes[key] = nil }

// CatalogVersion reads the catalog version at the snapshot and tracks it
// like any read: a catalog change committed since makes the commit fail,
// and the engine runs the operation again with the new catalog.
func (t *tx) CatalogVersion(ctx context.Context) (int64, error) {
	key := t.b.catalogVersionKey()
	if rev, ok := t.reads[key]; ok {
		// Read before in this transaction (the version is the key's
		// revision): asking etcd again would cost a round trip, and a
		// claim round of a job with a concurrency limit asks twice
		// (slotGate.seed, then the engine's catalog check).
		return rev, nil
	}
	if _, err := t.read(ctx, []string{key}); err != nil {
		return 0, err
	}
	return t.reads[key], nil
}

// PeekRows reads rows as a hint (Tx.PeekRows): at the
// transaction's snapshot (a first read fixes it), with its own writes, and
// neither guarded at commit nor counted in its operations (peek).
func (t *tx) PeekRows(ctx context.Context, keys []backends.RowKey) ([]*backends.StatusRow, error) {
	ks := make([]string, len(keys))
	for i, k := range keys {
		ks[i] = t.b.rowKey(k)
	}
	vals, err := t.peek(ctx, ks)
	if err != nil {
		return nil, err
	}
	return decodeRows(keys, vals)
}

// decodeRows decodes the values read for keys; a missing one is nil.
func decodeRows(keys []backends.RowKey, vals [][]byte) ([]*backends.StatusRow, error) {
	out := make([]*backends.StatusRow, len(keys))
	for i, v := range vals {
		if v == nil {
			continue
		}
		r, err := decodeRow(keys[i], v)
		if err != nil {
			return nil, err
		}
		out[i] = &r
	}
	return out, nil
}

// LatestReady finds the newest READY chunk of dataset between from and
// to (Tx.LatestReady): a backward range read of its rows at
// the transaction's snapshot, a page at a time (at a dataid the OUTPUT row
// comes before the INPUT rows), neither guarded at commit nor counted in
// its operations.
func (t *tx) LatestReady(ctx context.Context, dataset, job, from, to string) (string, bool, error) {
	prefix := t.b.key("rows", dataset) + "/"
	start := prefix
	if from != "" {
		start += backends.SortKey(from)
	}
	end := prefix + backends.SortKey(to) + "0" // "0" follows "/": every key at to
	const page = 64
	for {
		resp, err := t.b.get(ctx, start, clientv3.WithRange(end), clientv3.WithRev(t.rev),
			clientv3.WithSort(clientv3.SortByKey, clientv3.SortDescend), clientv3.WithLimit(page))
		if err != nil {
			return "", false, err
		}
		if t.rev == 0 {
			t.rev = resp.Header.Revision // a first read fixes the snapshot
		}
		for _, kv := range resp.Kvs {
			k, ok := t.b.parseRowKey(string(kv.Key))
			if !ok || k.Role != backends.RoleOutput || k.Job != job {
				continue
			}
			r, err := decodeRow(k, kv.Value)
			if err != nil {
				return "", false, err
			}
			if r.Status == backends.StatusReady {
				return k.DataID, true, nil
			}
		}
		if !resp.More || len(resp.Kvs) == 0 {
			return "", false, nil
		}
		end = string(resp.Kvs[len(resp.Kvs)-1].Key)
	}
}

// ListReads lists the job's mapped reads of the chunk at the snapshot,
// guards each key read and the whole prefix at commit, and applies this
// transaction's own writes.
func (t *tx) ListReads(ctx context.Context, dataset, dataid, job string) ([]backends.StatusRow, error) {
	prefix := t.b.rowKey(backends.RowKey{Dataset: dataset, DataID: dataid, Role: backends.RoleInput, Job: job}) + readForSep
	opts := []clientv3.OpOption{clientv3.WithPrefix()}
	if t.rev != 0 {
		opts = append(opts, clientv3.WithRev(t.rev))
	}
	resp, err := t.b.txn(ctx, nil, []clientv3.Op{clientv3.OpGet(prefix, opts...)}, nil)
	if err != nil {
		return nil, mapErr(err, "list mapped reads")
	}
	if t.rev == 0 {
		t.rev = resp.Header.Revision
	}
	byKey := map[backends.RowKey]*backends.StatusRow{}
	for _, kv := range resp.Responses[0].GetResponseRange().Kvs {
		key := string(kv.Key)
		k, ok := t.b.parseRowKey(key)
		if !ok {
			return nil, errors.New("etcd: status row key " + key + " is corrupt")
		}
		if _, read := t.reads[key]; !read {
			t.reads[key] = kv.ModRevision
		}
		r, err := decodeRow(k, kv.Value)
		if err != nil {
			return nil, err
		}
		byKey[k] = &r
	}
	for key, v := range t.writes {
		if len(key) <= len(prefix) || key[:len(prefix)] != prefix {
			continue
		}
		k, ok := t.b.parseRowKey(key)
		if !ok {
			continue
		}
		if v == nil {
			byKey[k] = nil
			continue
		}
		r, err := decodeRow(k, *v)
		if err != nil {
			return nil, err
		}
		byKey[k] = &r
	}
	t.ranges = append(t.ranges, prefix)
	return backends.SortedReads(byKey), nil
}

// LockChunks does nothing: every read is validated at commit.
func (t *tx) LockChunks(context.Context, string, []string, []string) error { return nil }

func (t *tx) GetRows(ctx context.Context, keys []backends.RowKey) ([]*backends.StatusRow, error) {
	ks := make([]string, len(keys))
	var fences []string
	for i, k := range keys {
		ks[i] = t.b.rowKey(k)
		if k.Role == backends.RoleOutput && k.Job != "" {
			// A claim reads the output row, then asks for a fence.
			fences = append(fences, t.b.fenceKey(k.Dataset, k.DataID))
		}
	}
	vals, err := t.read(ctx, ks, fences...)
	if err != nil {
		return nil, err
	}
	out, err := decodeRows(keys, vals)
	if err != nil {
		return nil, err
	}
	for i, r := range out {
		if r != nil && r.Role == backends.RoleOutput && r.Status == backends.StatusRunning {
			t.running[ks[i]] = true
		}
	}
	return out, nil
}

// mayIndexRunning tells whether the live-claim index may hold an entry for
// the OUTPUT row at key: the row was read as RUNNING, was not read at all,
// or this transaction wrote the entry.
func (t *tx) mayIndexRunning(key string, k backends.RowKey) bool {
	if _, ok := t.writes[t.b.runningKey(k)]; ok {
		return true
	}
	if _, read := t.reads[key]; !read {
		return true
	}
	return t.running[key]
}

// rowThere tells whether the row at key is there as far as this
// transaction knows: written in it, or read and found; a row neither read
// nor written is taken as missing, and its out/ key (outputs.go) written
// again.
func (t *tx) rowThere(key string) bool {
	if w, ok := t.writes[key]; ok {
		return w != nil
	}
	return t.reads[key] > 0
}

func (t *tx) PutRow(_ context.Context, r backends.StatusRow) error {
	key := t.b.rowKey(r.RowKey)
	val := encodeRow(r)
	if r.Role == backends.RoleOutput {
		if !t.rowThere(key) {
			t.write(t.b.outKey(r.RowKey), nil)
		}
		if r.Status == backends.StatusRunning {
			t.write(t.b.runningKey(r.RowKey), val)
		} else if t.mayIndexRunning(key, r.RowKey) {
			t.del(t.b.runningKey(r.RowKey))
		}
	}
	t.write(key, val)
	return nil
}

func (t *tx) DeleteRow(_ context.Context, k backends.RowKey) error {
	key := t.b.rowKey(k)
	if k.Role == backends.RoleOutput {
		if t.mayIndexRunning(key, k) {
			t.del(t.b.runningKey(k))
		}
		t.del(t.b.outKey(k))
	}
	t.del(key)
	return nil
}

func (t *tx) NextFence(ctx context.Context, dataset, dataid string) (int64, error) {
	key := t.b.fenceKey(dataset, dataid)
	vals, err := t.read(ctx, []string{key})
	if err != nil {
		return 0, err
	}
	n := t.b.fenceFloor.Load()
	if vals[0] != nil {
		if n, err = strconv.ParseInt(string(vals[0]), 10, 64); err != nil {
			return 0, errors.New("etcd: fence counter " + key + " is corrupt")
		}
	}
	n++
	t.write(key, []byte(strconv.FormatInt(n, 10)))
	return n, nil
}

// fenceFloorKey holds Backend.fenceFloor.
func (b *Backend) fenceFloorKey() string { return b.key("fencefloor", "global") }

// readFenceFloor reads the store's fence floor (fencefloor/global).
func (b *Backend) readFenceFloor(ctx context.Context) error {
	resp, err := b.get(ctx, b.fenceFloorKey())
	if err != nil {
		return mapErr(err, "read the fence floor")
	}
	if len(resp.Kvs) == 1 {
		n, err := strconv.ParseInt(string(resp.Kvs[0].Value), 10, 64)
		if err != nil {
			return errors.New("etcd: the fence floor " + b.fenceFloorKey() + " is corrupt")
		}
		b.fenceFloor.Store(n)
	}
	return nil
}

func (b *Backend) fenceKey(dataset, dataid string) string {
	return b.key("fences", dataset, backends.SortKey(dataid))
}

func (t *tx) AppendEvent(_ context.Context, e backends.Event) error {
	t.events = append(t.events, e)
	return nil
}

// candKey is cand/<job>/<0 resubmit | 1>/<sk>/<random>, and
// cand/<job>/1/<sk>/frontier for a frontier: frontiers of a job at one
// dataid are one key, so two placed there merge.
func (b *Backend) candKey(c backends.Candidate) string {
	kind := "1"
	if c.Resubmit {
		kind = "0"
	}
	suffix := randomID()
	if c.Frontier {
		suffix = "frontier"
	}
	return b.key("cand", c.Job, kind, backends.SortKey(c.DataID), suffix)
}

func (t *tx) AddCandidate(_ context.Context, c backends.Candidate) error {
	t.write(t.b.candKey(c), encodeCand(c))
	return nil
}

// parseCandKey reads "<0|1>/<sk>/<random>".
func parseCandKey(rest, job string) (backends.Candidate, bool) {
	if len(rest) < 2 || (rest[0] != '0' && rest[0] != '1') || rest[1] != '/' {
		return backends.Candidate{}, false
	}
	body := rest[2:]
	i := len(body) - 1
	for i >= 0 && body[i] != '/' {
		i--
	}
	if i < 0 {
		return backends.Candidate{}, false
	}
	id, err := backends.DataIDFromSortKey(body[:i])
	if err != nil {
		return backends.Candidate{}, false
	}
	return backends.Candidate{Job: job, DataID: id, Resubmit: rest[0] == '0'}, true
}

func (t *tx) DropCandidate(_ context.Context, c backends.Candidate) error {
	key, ok := c.Handle.(string)
	if !ok {
		return errors.New("etcd: candidate handle is not an etcd key")
	}
	t.dropped[key] = true
	t.del(key)
	return nil
}
