package etcd

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"maps"
	"slices"
	"strings"

	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/chunklock/chunklock/backends"
)

// Chunk counts (backends.StatusCounter), kept from the events every
// transaction commits with its rows (evq/, see doc.go):
//
//	cnt/at           the base: every OUTPUT row counted at revision R, by
//	                 dataset, job and status, written once (the first
//	                 mover to find it missing counts the rows)
//	cnt/c/<dataset>  the net changes of the transactions after R whose
//	                 events the mover has sequenced, by job and status
//	cntgen           written by every deleteDataset that drops cnt/ (its
//	                 rows go without events), and by the end of a store
//	                 copy's load (FinishLoad: rows and events were loaded
//	                 apart): a base counted at a revision before it is
//	                 never written
//	cnt/vb/<VB>/<dataset>/<bucket>
//	                 the base's counts of a dataset with dimensions by the
//	                 value at each place after the first of its dataids,
//	                 in valueBuckets keys by the value's hash: written
//	                 before cnt/at, in as many transactions as they take,
//	                 under a name of the writer's (VB: the revision and a
//	                 token), which cnt/at gives (the keys of a base that
//	                 lost the race to write cnt/at are dropped)
//	cnt/v/<dataset>/<bucket>
//	                 the folded changes of those, by the same buckets: a
//	                 fold rewrites the buckets of the values it changes,
//	                 not every value of the dataset
//
// Counts by value (backends.ValueCounter) are jobCounts whose job is
// valueKey(job, place, value). A base written before they were kept so
// (countBase.V below valuesBase) is dropped and counted again at the
// first open by a version that keeps them, as a deleteDataset drops it.
//
// A fold group's transaction stays within etcd's limits: at most
// MaxTxnOps compares, its bytes within maxTxnBytes (a group too large is
// folded in halves); a single transaction whose changes would not fit
// alone (a range over every value of several wide datasets) drops the
// counts, to be counted again from the rows (ensureCounts).
//
// The mover folds a transaction's changes into cnt/c/ in the etcd Txn
// that deletes its evq/ entry, guarded by that entry and the counts it
// read, so a change is folded once. A count reads the base, the dataset's
// folded changes and the evq/ entries still pending after R at one
// revision: exact at that revision, however long the history.

// jobCounts is a dataset's OUTPUT rows by job and status.
type jobCounts map[string]map[backends.Status]int

type countBase struct {
	Rev    int64                `json:"r"`
	Counts map[string]jobCounts `json:"c"`
	// V is 2 for a base whose counts by value are kept beside it in
	// buckets (cnt/vb/<VB>/), 1 for one with a key per dataset, 0 for one
	// written before counts by value.
	V int `json:"v,omitempty"`
	// VB names the base's keys by value: its revision and a token of the
	// process that counted it (two may count at one revision).
	VB string `json:"vb,omitempty"`
}

// valuesBase is the version of countBase that keeps counts by value.
const valuesBase = 2

// valueBuckets is how many keys a dataset's counts by value are spread
// over: a fold rewrites only the buckets of the values it changes (ten
// thousand customers: about 7 KB a bucket).
const valueBuckets = 64

// bucketOf is the bucket of a valueKey.
func bucketOf(key string) int {
	h := fnv.New32a()
	_, _ = h.Write([]byte(key))
	return int(h.Sum32() % valueBuckets)
}

// byBucket splits counts by value into their buckets.
func byBucket(values jobCounts) map[int]jobCounts {
	out := map[int]jobCounts{}
	for k, m := range values {
		i := bucketOf(k)
		if out[i] == nil {
			out[i] = jobCounts{}
		}
		out[i][k] = m
	}
	return out
}

// valueKey is the jobCounts key of job's rows whose dataid has value at
// place i (1 to 3).
func valueKey(job string, i int, value string) string {
	return job + "\x00" + string(rune('0'+i)) + "\x00" + value
}

var _ backends.StatusCounter = (*Backend)(nil)

var errFoldConflict = errors.New("etcd: another process folded the same chunk counts; retried on the next round")

func (c jobCounts) add(job string, s backends.Status, n int) {
	if s == backends.StatusNone || n == 0 {
		return
	}
	m := c[job]
	if m == nil {
		m = map[backends.Status]int{}
		c[job] = m
	}
	if m[s] += n; m[s] == 0 {
		delete(m, s)
	}
}

// addEvents adds the changes to OUTPUT rows that evs record, by dataset:
// by job, and by job and value for the dataids with dimensions.
func addEvents(into map[string]jobCounts, evs []backends.Event) {
	for _, e := range evs {
		if e.Role != backends.RoleOutput || e.From == e.To {
			continue
		}
		c := into[e.Dataset]
		if c == nil {
			c = jobCounts{}
			into[e.Dataset] = c
		}
		c.add(e.Job, e.From, -1)
		c.add(e.Job, e.To, 1)
		if strings.Contains(e.DataID, "|") {
			for i, v := range strings.Split(e.DataID, "|")[1:] {
				c.add(valueKey(e.Job, i+1, v), e.From, -1)
				c.add(valueKey(e.Job, i+1, v), e.To, 1)
			}
		}
	}
}

func (b *Backend) countsKey(dataset string) string { return b.key("cnt", "c", dataset) }

// valuesPrefix is the prefix of dataset's folded counts by value, and
// valuesKey the key of one bucket of them.
func (b *Backend) valuesPrefix(dataset string) string { return b.key("cnt", "v", dataset) + "/" }
func (b *Backend) valuesKey(dataset string, bucket int) string {
	return b.valuesPrefix(dataset) + fmt.Sprintf("%02x", bucket)
}

// valuesBaseRoot is the prefix of the counts by value of the base named
// vb (countBase.VB), valuesBasePrefix that of dataset's.
func (b *Backend) valuesBaseRoot(vb string) string { return b.key("cnt", "vb", vb) + "/" }
func (b *Backend) valuesBasePrefix(vb, dataset string) string {
	return b.valuesBaseRoot(vb) + dataset + "/"
}

// baseName names the counts by value of a base counted at rev.
func baseName(rev int64) string {
	var t [6]byte
	_, _ = rand.Read(t[:])
	return fmt.Sprintf("%020d-%x", rev, t)
}

var _ backends.ValueCounter = (*Backend)(nil)

// CountValueStatuses counts job's OUTPUT rows on dataset by the value at
// place i (1 to 3) of their dataids and by status: the base, the folded
// changes and the evq/ entries pending after the base, read at one
// revision, as CountStatuses does.
func (b *Backend) CountValueStatuses(ctx context.Context, dataset, job string, i int) (map[string]map[backends.Status]int, error) {
	if i < 1 || i > 3 {
		return nil, fmt.Errorf("etcd: values are counted at dimensions 1 to 3, not %d", i)
	}
	evq := b.key("evq") + "/"
	// The base's keys are under its revision, which cnt/at names: read
	// with the one this process knows, and again if cnt/at names another.
	var guess string
	if kb := b.counts.Load(); kb != nil {
		guess = kb.vb
	}
	for attempt := 0; ; attempt++ {
		resp, err := b.txn(ctx, nil, []clientv3.Op{
			clientv3.OpGet(b.key("cnt", "at")),
			clientv3.OpGet(b.valuesBasePrefix(guess, dataset), clientv3.WithPrefix()),
			clientv3.OpGet(b.valuesPrefix(dataset), clientv3.WithPrefix()),
			clientv3.OpGet(evq, clientv3.WithPrefix()),
		}, nil)
		if err != nil {
			return nil, mapErr(err, "read chunk counts")
		}
		rev := resp.Header.Revision
		baseKvs := resp.Responses[0].GetResponseRange().Kvs
		var base countBase
		if len(baseKvs) == 1 {
			if err := json.Unmarshal(baseKvs[0].Value, &base); err != nil {
				return nil, fmt.Errorf("etcd: chunk counts %s are corrupt: %w", baseKvs[0].Key, err)
			}
		}
		if len(baseKvs) == 0 || base.V < valuesBase || base.VB != guess && attempt >= 2 {
			// Not counted yet (or by an earlier version, or being counted
			// again as this reads): count the rows.
			all, err := b.countRows(ctx, b.key("rows", dataset)+"/", rev)
			if err != nil {
				return nil, err
			}
			return valuesOf(all[dataset], job, i), nil
		}
		if base.VB != guess {
			guess = base.VB
			continue
		}
		out := jobCounts{}
		for _, r := range resp.Responses[1:3] {
			for _, kv := range r.GetResponseRange().Kvs {
				var c jobCounts
				if err := json.Unmarshal(kv.Value, &c); err != nil {
					return nil, fmt.Errorf("etcd: chunk counts %s are corrupt: %w", kv.Key, err)
				}
				for k, m := range c {
					for s, n := range m {
						out.add(k, s, n)
					}
				}
			}
		}
		pending, err := pendingAfter(resp.Responses[3].GetResponseRange().Kvs, base.Rev)
		if err != nil {
			return nil, err
		}
		for k, m := range pending[dataset] {
			for s, n := range m {
				out.add(k, s, n)
			}
		}
		return valuesOf(out, job, i), nil
	}
}

// valuesOf is the counts by value at place i of job's rows in c.
func valuesOf(c jobCounts, job string, i int) map[string]map[backends.Status]int {
	prefix := valueKey(job, i, "")
	out := map[string]map[backends.Status]int{}
	for k, m := range c {
		if v, ok := strings.CutPrefix(k, prefix); ok && len(m) > 0 {
			out[v] = maps.Clone(m)
		}
	}
	return out
}

// CountStatuses counts job's OUTPUT rows on dataset by status.
func (b *Backend) CountStatuses(ctx context.Context, dataset, job string) (map[backends.Status]int, error) {
	evq := b.key("evq") + "/"
	resp, err := b.txn(ctx, nil, []clientv3.Op{
		clientv3.OpGet(b.key("cnt", "at")),
		clientv3.OpGet(b.countsKey(dataset)),
		clientv3.OpGet(evq, clientv3.WithPrefix()),
	}, nil)
	if err != nil {
		return nil, mapErr(err, "read chunk counts")
	}
	rev := resp.Header.Revision
	baseKvs := resp.Responses[0].GetResponseRange().Kvs
	if len(baseKvs) == 0 {
		return b.scanCounts(ctx, dataset, job, rev) // not counted yet: count the rows
	}
	var base countBase
	if err := json.Unmarshal(baseKvs[0].Value, &base); err != nil {
		return nil, fmt.Errorf("etcd: chunk counts %s are corrupt: %w", baseKvs[0].Key, err)
	}
	out := jobCounts{}
	for s, n := range base.Counts[dataset][job] {
		out.add(job, s, n)
	}
	if kvs := resp.Responses[1].GetResponseRange().Kvs; len(kvs) == 1 {
		var folded jobCounts
		if err := json.Unmarshal(kvs[0].Value, &folded); err != nil {
			return nil, fmt.Errorf("etcd: chunk counts %s are corrupt: %w", kvs[0].Key, err)
		}
		for s, n := range folded[job] {
			out.add(job, s, n)
		}
	}
	pending, err := pendingAfter(resp.Responses[2].GetResponseRange().Kvs, base.Rev)
	if err != nil {
		return nil, err
	}
	for s, n := range pending[dataset][job] {
		out.add(job, s, n)
	}
	if out[job] == nil {
		return map[backends.Status]int{}, nil
	}
	return out[job], nil
}

// scanCounts counts job's OUTPUT rows on dataset at rev by reading them.
func (b *Backend) scanCounts(ctx context.Context, dataset, job string, rev int64) (map[backends.Status]int, error) {
	all, err := b.countRows(ctx, b.key("rows", dataset)+"/", rev)
	if err != nil {
		return nil, err
	}
	if m := all[dataset][job]; m != nil {
		return m, nil
	}
	return map[backends.Status]int{}, nil
}

// countRows counts the OUTPUT rows under prefix at rev.
func (b *Backend) countRows(ctx context.Context, prefix string, rev int64) (map[string]jobCounts, error) {
	rows := b.key("rows") + "/"
	out := map[string]jobCounts{}
	err := b.scan(ctx, prefix, clientv3.GetPrefixRangeEnd(prefix), rev, func(key, val []byte, _ int64) (bool, error) {
		k, ok := parseCursor(strings.TrimPrefix(string(key), rows))
		if !ok || k.Role != backends.RoleOutput {
			return true, nil
		}
		r, err := decodeRow(k, val)
		if err != nil {
			return false, err
		}
		c := out[k.Dataset]
		if c == nil {
			c = jobCounts{}
			out[k.Dataset] = c
		}
		c.add(k.Job, r.Status, 1)
		if strings.Contains(k.DataID, "|") {
			for i, v := range strings.Split(k.DataID, "|")[1:] {
				c.add(valueKey(k.Job, i+1, v), r.Status, 1)
			}
		}
		return true, nil
	})
	return out, err
}

// splitValues splits counts into the totals by job and the counts by
// value.
func splitValues(c jobCounts) (totals, values jobCounts) {
	totals, values = jobCounts{}, jobCounts{}
	for k, m := range c {
		if strings.Contains(k, "\x00") {
			values[k] = m
		} else {
			totals[k] = m
		}
	}
	return totals, values
}

// ensureCounts makes sure the base of the counts exists: when it is
// missing (a new store, or one made before counts), it counts every OUTPUT
// row at one revision and writes the base, unless another process did
// first. It returns the base (knownBase).
func (b *Backend) ensureCounts(ctx context.Context) (knownBase, error) {
	if kb := b.counts.Load(); kb != nil {
		return *kb, nil
	}
	at := b.key("cnt", "at")
	resp, err := b.get(ctx, at)
	if err != nil {
		return knownBase{}, err
	}
	if len(resp.Kvs) == 0 {
		if err := b.writeBase(ctx, resp.Header.Revision); err != nil {
			return knownBase{}, err
		}
		if resp, err = b.get(ctx, at); err != nil {
			return knownBase{}, err
		}
		if len(resp.Kvs) == 0 {
			return knownBase{}, errFoldConflict // a deletion came between: count again on the next round
		}
	}
	var base countBase
	if len(resp.Kvs) != 1 || json.Unmarshal(resp.Kvs[0].Value, &base) != nil || base.Rev == 0 {
		return knownBase{}, errors.New("etcd: the chunk counts base (cnt/at) is missing or corrupt")
	}
	if base.V < valuesBase {
		// Written before counts by value were kept: drop it (unless
		// another process did), and count again on the next round.
		_, err := b.txn(ctx, []clientv3.Cmp{clientv3.Compare(clientv3.ModRevision(at), "=", resp.Kvs[0].ModRevision)},
			[]clientv3.Op{clientv3.OpDelete(b.key("cnt")+"/", clientv3.WithPrefix()), clientv3.OpPut(b.key("cntgen"), "")}, nil)
		if err != nil {
			return knownBase{}, mapErr(err, "drop the chunk counts of an earlier version")
		}
		return knownBase{}, errFoldConflict
	}
	// The keys by value of bases that lost the race to cnt/at (or whose
	// writer stopped half way) go, unless the base changed meanwhile.
	root, all := b.valuesBaseRoot(base.VB), b.key("cnt", "vb")+"/"
	_, err = b.txn(ctx, []clientv3.Cmp{clientv3.Compare(clientv3.ModRevision(at), "=", resp.Kvs[0].ModRevision)}, []clientv3.Op{
		clientv3.OpDelete(all, clientv3.WithRange(root)),
		clientv3.OpDelete(clientv3.GetPrefixRangeEnd(root), clientv3.WithRange(clientv3.GetPrefixRangeEnd(all))),
	}, nil)
	if err != nil {
		return knownBase{}, mapErr(err, "drop the chunk counts of bases not written")
	}
	kb := knownBase{rev: base.Rev, at: resp.Kvs[0].ModRevision, vb: base.VB}
	b.counts.Store(&kb)
	return kb, nil
}

// knownBase is the chunk counts' base a process knows: the revision its
// rows were counted at, the ModRevision of cnt/at, and the name of its
// keys by value. A mover folds the events of one base only: an evq entry
// after rev, into counts guarded by at (so a base counted again meanwhile,
// which may hold the entry's changes, fails the fold).
type knownBase struct {
	rev, at int64
	vb      string
}

// writeBase counts every OUTPUT row at rev and writes the base of the
// counts, unless another process wrote one first or a dataset was deleted
// after rev (cntgen moved): its rows went without events, and a base
// counted before would hold them for ever. The counts by value go first,
// under rev, in transactions within etcd's limits, each on the same
// conditions; cnt/at, written last, makes them the base's.
func (b *Backend) writeBase(ctx context.Context, rev int64) error {
	base := countBase{Rev: rev, V: valuesBase, VB: baseName(rev), Counts: map[string]jobCounts{}}
	all, err := b.countRows(ctx, b.key("rows")+"/", rev)
	if err != nil {
		return err
	}
	at := b.key("cnt", "at")
	cmps := []clientv3.Cmp{
		clientv3.Compare(clientv3.CreateRevision(at), "=", 0),
		clientv3.Compare(clientv3.ModRevision(b.key("cntgen")), "<", rev+1),
	}
	var ops []clientv3.Op
	size := 0
	lost := false
	flush := func() error {
		if len(ops) == 0 || lost {
			return nil
		}
		resp, err := b.txn(ctx, cmps, ops, nil)
		if err != nil {
			return mapErr(err, "write the chunk counts by value")
		}
		lost = !resp.Succeeded
		ops, size = ops[:0], 0
		return nil
	}
	budget := b.maxTxnBytes() / 2
	for _, d := range slices.Sorted(maps.Keys(all)) {
		totals, values := splitValues(all[d])
		base.Counts[d] = totals
		buckets := byBucket(values)
		for _, i := range slices.Sorted(maps.Keys(buckets)) {
			v, _ := json.Marshal(buckets[i])
			key := b.valuesBasePrefix(base.VB, d) + fmt.Sprintf("%02x", i)
			n := len(key) + len(v) + opOverhead
			if len(ops) > 0 && (len(ops)+len(cmps) >= b.cfg.MaxTxnOps || size+n > budget) {
				if err := flush(); err != nil {
					return err
				}
			}
			ops = append(ops, clientv3.OpPut(key, string(v)))
			size += n
		}
	}
	if err := flush(); err != nil {
		return err
	}
	if !lost {
		v, _ := json.Marshal(base)
		resp, err := b.txn(ctx, cmps, []clientv3.Op{clientv3.OpPut(at, string(v))}, nil)
		if err != nil {
			return mapErr(err, "write the chunk counts")
		}
		lost = !resp.Succeeded
	}
	if lost {
		// Another base, or a deletion: these keys are no one's.
		_, err := b.cli.Delete(ctx, b.valuesBaseRoot(base.VB), clientv3.WithPrefix())
		return mapErr(err, "drop the chunk counts of a base not written")
	}
	return nil
}

// errFoldTooLarge is a fold group whose transaction would pass etcd's
// limits: foldAndDrop folds it in halves.
var errFoldTooLarge = errors.New("etcd: the chunk counts' fold is larger than a transaction may be")

// countParts lists the keys a set of count changes touches: each
// dataset's totals (cnt/c/) and the buckets of its values changed
// (cnt/v/).
func (b *Backend) countParts(changes map[string]jobCounts) map[string]jobCounts {
	parts := map[string]jobCounts{}
	for d, c := range changes {
		totals, values := splitValues(c)
		if len(totals) > 0 {
			parts[b.countsKey(d)] = totals
		}
		for i, bc := range byBucket(values) {
			parts[b.valuesKey(d, i)] = bc
		}
	}
	return parts
}

// foldAndDrop deletes the evq/ entries kvs, whose events are sequenced,
// and adds the count changes of each (changes[i]) to cnt/c/ and cnt/v/, a
// group of entries per etcd Txn, each guarded by its entries and the
// counts it read: a group holds at most MaxTxnOps compares (its entries,
// the keys it changes and the base's), and is halved while its
// transaction would be too large. One entry whose changes alone are too
// large drops the counts, to be counted again from the rows.
func (b *Backend) foldAndDrop(ctx context.Context, kb knownBase, kvs []*mvccpb.KeyValue, changes []map[string]jobCounts) error {
	limit := len(kvs)
	for len(kvs) > 0 {
		group := map[string]jobCounts{}
		keys := map[string]bool{}
		n := 0
		for ; n < min(len(kvs), limit); n++ {
			added := 0
			for k := range b.countParts(changes[n]) {
				if !keys[k] {
					added++
				}
			}
			if n > 0 && 1+(n+1)+len(keys)+added > b.cfg.MaxTxnOps {
				break
			}
			for k := range b.countParts(changes[n]) {
				keys[k] = true
			}
			for d, c := range changes[n] {
				if group[d] == nil {
					group[d] = jobCounts{}
				}
				for job, m := range c {
					for s, k := range m {
						group[d].add(job, s, k)
					}
				}
			}
		}
		err := b.fold(ctx, kb, kvs[:n], group)
		if errors.Is(err, errFoldTooLarge) {
			if n > 1 {
				limit = n / 2
				continue
			}
			return b.dropCounts(ctx, kb)
		}
		if err != nil {
			return err
		}
		kvs, changes = kvs[n:], changes[n:]
		limit = len(kvs)
	}
	return nil
}

// dropCounts drops the counts (unless another process changed the base),
// as a deleteDataset does: the next round counts the rows again.
func (b *Backend) dropCounts(ctx context.Context, kb knownBase) error {
	at := b.key("cnt", "at")
	_, err := b.txn(ctx, []clientv3.Cmp{clientv3.Compare(clientv3.ModRevision(at), "=", kb.at)},
		[]clientv3.Op{clientv3.OpDelete(b.key("cnt")+"/", clientv3.WithPrefix()), clientv3.OpPut(b.key("cntgen"), "")}, nil)
	if err != nil {
		return mapErr(err, "drop the chunk counts")
	}
	b.counts.Store(nil)
	return errFoldConflict
}

// fold commits one group of foldAndDrop: each dataset's totals into
// cnt/c/<dataset>, its counts by value into the buckets of cnt/v/<dataset>/
// they fall in; errFoldTooLarge, and nothing written, when that
// transaction would be larger than etcd takes.
func (b *Backend) fold(ctx context.Context, kb knownBase, kvs []*mvccpb.KeyValue, changes map[string]jobCounts) error {
	parts := b.countParts(changes)
	keys := slices.Sorted(maps.Keys(parts))
	// The base's compare, one per entry and one per key changed (and the
	// read of those keys before): more than a transaction may hold.
	if 1+len(kvs)+len(keys) > b.cfg.MaxTxnOps {
		return errFoldTooLarge
	}
	// The base the mover read its entries under must still be the one:
	// counts dropped and counted again since (by this process or another)
	// would count twice what the new base holds.
	cmps := []clientv3.Cmp{clientv3.Compare(clientv3.ModRevision(b.key("cnt", "at")), "=", kb.at)}
	var ops []clientv3.Op
	size := 0
	for _, kv := range kvs {
		cmps = append(cmps, clientv3.Compare(clientv3.ModRevision(string(kv.Key)), "=", kv.ModRevision))
		ops = append(ops, clientv3.OpDelete(string(kv.Key)))
		size += 2 * (len(kv.Key) + opOverhead)
	}
	if len(keys) > 0 {
		gets := make([]clientv3.Op, len(keys))
		for i, k := range keys {
			gets[i] = clientv3.OpGet(k)
		}
		resp, err := b.txn(ctx, nil, gets, nil)
		if err != nil {
			return mapErr(err, "read chunk counts")
		}
		for i, k := range keys {
			cur := jobCounts{}
			if kvs := resp.Responses[i].GetResponseRange().Kvs; len(kvs) == 1 {
				if err := json.Unmarshal(kvs[0].Value, &cur); err != nil {
					return fmt.Errorf("etcd: chunk counts %s are corrupt: %w", k, err)
				}
				cmps = append(cmps, clientv3.Compare(clientv3.ModRevision(k), "=", kvs[0].ModRevision))
			} else {
				cmps = append(cmps, clientv3.Compare(clientv3.CreateRevision(k), "=", 0))
			}
			for job, m := range parts[k] {
				for s, n := range m {
					cur.add(job, s, n)
				}
			}
			for job, m := range cur {
				if len(m) == 0 {
					delete(cur, job)
				}
			}
			v, _ := json.Marshal(cur)
			ops = append(ops, clientv3.OpPut(k, string(v)))
			size += 2*(len(k)+opOverhead) + len(v)
		}
	}
	if size > b.maxTxnBytes() {
		return errFoldTooLarge
	}
	resp, err := b.txn(ctx, cmps, ops, nil)
	if err != nil {
		return mapErr(err, "fold chunk counts")
	}
	if !resp.Succeeded {
		b.counts.Store(nil) // read the base again on the next round
		return errFoldConflict
	}
	return nil
}

// pendingAfter is what the events of the evq/ entries kvs written after
// revision rev (those the base does not hold yet) add to the counts.
func pendingAfter(kvs []*mvccpb.KeyValue, rev int64) (map[string]jobCounts, error) {
	pending := map[string]jobCounts{}
	for _, kv := range kvs {
		if kv.ModRevision <= rev {
			continue // in the base already
		}
		evs, err := decodePending(kv.Key, kv.Value, kv.ModRevision)
		if err != nil {
			return nil, err
		}
		addEvents(pending, evs)
	}
	return pending, nil
}
