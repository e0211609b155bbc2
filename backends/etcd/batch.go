package etcd

import (
	"context"
	"errors"
	"strings"
	"sync"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/chunklock/chunklock/backends"
)

// The engine serves concurrent operations of this backend several per
// transaction (backends.Limits): a findNext batch reserves the first
// candidates of a job in one range read, and a batch of completions or
// heartbeats commits in one Txn guarded by every key it read. A batch is
// bounded by the cluster's --max-txn-ops (Limits.MaxBatchKeys). Batches of
// one process that run at once take disjoint candidates (reservations
// below); batches of different processes that collide are told apart by
// the commit's guard, as single operations are.

// maxBatch is how many operations one transaction may serve.
const maxBatch = 32

// Limits lets the engine combine up to maxBatch operations per Txn, keeps
// a batch's compares and writes under --max-txn-ops, with room for the
// catalog version, the commit marker and the events, and its commits
// under --max-request-bytes (budget.go).
func (b *Backend) Limits() backends.Limits {
	return backends.Limits{MaxBatch: maxBatch, MaxBatchKeys: max(b.cfg.MaxTxnOps-8, 1),
		MaxTxnBytes: b.maxTxnBytes(), CommitBytes: b.commitBytes}
}

// reservations are the candidate keys that transactions of this process
// are working on, by job: a concurrent NextCandidates passes over them
// instead of colliding with them at commit.
type reservations struct {
	mu   sync.Mutex
	jobs map[string]map[string]bool
}

// count tells how many candidates of job are held.
func (r *reservations) count(job string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.jobs[job])
}

// take reserves the first n keys of job in keys that nobody holds.
func (r *reservations) take(job string, keys []string, n int) []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.jobs == nil {
		r.jobs = map[string]map[string]bool{}
	}
	held := r.jobs[job]
	if held == nil {
		held = map[string]bool{}
		r.jobs[job] = held
	}
	var out []string
	for _, k := range keys {
		if len(out) == n {
			break
		}
		if !held[k] {
			held[k] = true
			out = append(out, k)
		}
	}
	return out
}

// release ends the reservations of keys of job.
func (r *reservations) release(job string, keys []string) {
	if len(keys) == 0 {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	held := r.jobs[job]
	for _, k := range keys {
		delete(held, k)
	}
	if len(held) == 0 {
		delete(r.jobs, job)
	}
}

// NextCandidates reads the job's first candidates at the snapshot and
// returns up to n of them, resubmitted chunks first, leaving out the ones
// this transaction dropped and the ones other transactions of this process
// hold; it tracks and holds (until the attempt ends) the ones it returns.
func (t *tx) NextCandidates(ctx context.Context, job string, n int, now time.Time) ([]backends.Candidate, error) {
	if n <= 0 {
		return nil, nil
	}
	base := t.b.key("cand", job) + "/"
	if t.candJob != "" && t.candJob != job {
		return nil, errors.New("etcd: one transaction reads the candidates of one job")
	}
	t.candJob = job
	// Other transactions of this process may reserve candidates while this
	// one reads: read further (at the same snapshot) until n are taken or
	// the queue ends. Reads go window by window (see headHint): etcd visits
	// every key of a range, up to its end, to count it.
	var taken []string
	revs := map[string]int64{}
	vals := map[string][]byte{}
	end := clientv3.GetPrefixRangeEnd(base)
	hint := t.b.hints.get(job)
	p := hint.p
	to := hint.windowEnd(base, p, end)
	from := base
	first, firstCount, widened := true, int64(0), false
	hidden := 0 // candidates not due yet passed over: each read asks for that many more
	for len(taken) < n {
		limit := int64(n - len(taken) + len(t.dropped) + t.b.resv.count(job) + hidden)
		resp, err := t.b.get(ctx, from, clientv3.WithRange(to), clientv3.WithLimit(limit), clientv3.WithRev(t.rev))
		if err != nil {
			return nil, err
		}
		if t.rev == 0 {
			t.rev = resp.Header.Revision
		}
		if first {
			first, firstCount = false, resp.Count
		}
		keys := make([]string, 0, len(resp.Kvs))
		for _, kv := range resp.Kvs {
			k := string(kv.Key)
			if notDue(kv.Value, now) {
				hidden++
				continue
			}
			if t.dropped[k] || t.reserved[k] {
				continue
			}
			keys = append(keys, k)
			revs[k] = kv.ModRevision
			vals[k] = kv.Value
		}
		got := t.b.resv.take(job, keys, n-len(taken))
		t.reserved = t.reserved.with(got)
		taken = append(taken, got...)
		if resp.More && len(resp.Kvs) > 0 {
			from = string(resp.Kvs[len(resp.Kvs)-1].Key) + "\x00"
			continue
		}
		if to == end {
			break
		}
		// This window is used up: the next one, wider.
		from, p, widened = to, p-1, true
		if to = hint.windowEnd(base, p, end); to <= from {
			to = end
		}
	}
	t.b.hints.update(job, base, hint, taken, p, widened, firstCount, n)
	out := make([]backends.Candidate, 0, len(taken))
	for _, k := range taken {
		c, ok := parseCandKey(k[len(base):], job)
		if !ok {
			return nil, errors.New("etcd: candidate key " + k + " is corrupt")
		}
		c.Handle = k
		decodeCand(&c, vals[k])
		t.reads[k] = revs[k]
		out = append(out, c)
	}
	return out, nil
}

// reservedSet is the candidate keys one attempt holds.
type reservedSet map[string]bool

func (s reservedSet) with(keys []string) reservedSet {
	if len(keys) == 0 {
		return s
	}
	if s == nil {
		s = reservedSet{}
	}
	for _, k := range keys {
		s[k] = true
	}
	return s
}

// releaseReserved ends the reservations of an attempt.
func (t *tx) releaseReserved() {
	if len(t.reserved) == 0 {
		return
	}
	keys := make([]string, 0, len(t.reserved))
	for k := range t.reserved {
		keys = append(keys, k)
	}
	t.b.resv.release(t.candJob, keys)
	t.reserved = nil
}

// A job's candidate range holds, before its head, the candidates consumed
// since the last compaction (deleted keys), and after it every chunk
// waiting: etcd visits all of them to count a range, whatever its limit.
// So NextCandidates reads a window: from the start of the range to the end
// of the keys sharing a prefix with the last candidate this process took
// (its hint), and only when that window holds too few, the next, wider
// ones. The window adapts: narrower when it counted far more candidates
// than were asked for, wider when it came up short. Windows change what a
// read costs, never what it returns: each holds every key before its end.

// headHint is the window of one job: key is the last candidate taken (""
// for none: read the whole range), p the length of its prefix after the
// range's base that bounds the window.
type headHint struct {
	key string
	p   int
}

// minWindowPrefix is "1/" and the three length digits of a sort key: a
// window never spans dataids of another length than its hint's.
const minWindowPrefix = 5

func (h headHint) windowEnd(base string, p int, end string) string {
	if h.key == "" || p < minWindowPrefix || len(h.key) < len(base)+p {
		return end
	}
	return clientv3.GetPrefixRangeEnd(h.key[:len(base)+p])
}

// headHints are the windows of this process, by job.
type headHints struct {
	mu   sync.Mutex
	jobs map[string]headHint
}

func (hs *headHints) get(job string) headHint {
	hs.mu.Lock()
	defer hs.mu.Unlock()
	return hs.jobs[job]
}

// update moves job's hint to the last plain candidate taken, and its window
// to the width that was needed: the one the read widened to, or narrower
// when the first window counted more than 16 times the candidates asked for.
func (hs *headHints) update(job, base string, old headHint, taken []string, p int, widened bool, firstCount int64, n int) {
	last := ""
	for _, k := range taken {
		if strings.HasPrefix(k[len(base):], "1/") && k > last {
			last = k
		}
	}
	if last == "" {
		return
	}
	sk := strings.LastIndexByte(last, '/') - len(base) // prefix length up to the end of the sort key
	switch {
	case old.key == "":
		p = sk - 1 // first window: dataids differing in their last character
	case widened:
	case firstCount > 16*int64(n) && p < sk:
		p++
	}
	p = max(min(p, sk), minWindowPrefix)
	hs.mu.Lock()
	defer hs.mu.Unlock()
	if hs.jobs == nil {
		hs.jobs = map[string]headHint{}
	}
	hs.jobs[job] = headHint{key: last, p: p}
}
