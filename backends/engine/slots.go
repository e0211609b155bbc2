package engine

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/chunklock/chunklock/backends"
)

// Concurrency limits (SPEC §4 guarantee 7): a job never holds more live
// claims than its MaxConcurrent, nor a pool more than its Slots.
//
// Each limited job, and each pool, has a slot record listing the live
// claims that hold one of its slots. A claim reads and locks the records
// of its job in its own transaction, after its chunk locks, counts the
// holders, and adds itself; a force supersedes a holder in place. Ending
// a claim (complete, fail, release, expiry) notes its token in the
// record's ended record, in the ending's transaction; the next claim
// drops the holders noted there (slotReleases). Heartbeats do not touch
// the records: a holder keeps the lease it had when written, and only a
// holder whose recorded lease has passed is checked against its OUTPUT
// row (still RUNNING with the same token and a lease to come?) before it
// is counted or pruned. A claim past its lease is thus not counted, even
// before the reaper fails it. When a job's definition changes, its
// holders are rebuilt from its RUNNING rows (seed), and a pool's record
// drops the holders of jobs that no longer name it (dropLeavers). Every
// read that may be stale errs on the side of counting a claim that has
// ended: a limit is never exceeded.
//
// A Tx that counts live claims itself (LiveCounter: PostgreSQL) keeps no
// holders: a claim locks the records, as above, and then counts the live
// claims of the record's jobs, which every claim before it has committed;
// claims write nothing to the records, and endings nothing at all.

// maxHolderChecks bounds how many holders one transaction checks against
// their rows; holders left unchecked are counted (the safe side).
const maxHolderChecks = 8

// slotKeys are the records a claim of job holds a slot in, in ascending
// order: none for a job without limit or pool.
func slotKeys(job backends.Job) []string {
	var keys []string
	if job.MaxConcurrent > 0 {
		keys = append(keys, backends.JobSlotsKey(job.ID))
	}
	if job.Pool != "" {
		keys = append(keys, backends.PoolSlotsKey(job.Pool))
	}
	slices.Sort(keys)
	return keys
}

// slotStrategy tells how tx's claims count the live claims of a job or pool
// (backends/backend.go): a LiveCounter counts rows; any other Tx must be a
// HolderTx, whose slot records list their holders.
func slotStrategy(tx backends.Tx) (backends.LiveCounter, backends.HolderTx, error) {
	if lc, ok := tx.(backends.LiveCounter); ok {
		return lc, nil, nil
	}
	if ht, ok := tx.(backends.HolderTx); ok {
		return nil, ht, nil
	}
	return nil, nil, fmt.Errorf("backends: the Tx %T neither counts live claims (LiveCounter) nor lists slot holders (HolderTx)", tx)
}

// prefetchSlots tells tx which slot records a claim of a job with these
// slot keys (ending: endings of such claims) reads next, when it cares.
func prefetchSlots(tx backends.Tx, keys []string, ending bool) {
	p, ok := tx.(backends.SlotPrefetcher)
	if !ok || len(keys) == 0 {
		return
	}
	if lc, _, _ := slotStrategy(tx); lc != nil {
		if !ending { // endings read no record
			p.PrefetchSlots(keys, nil)
		}
		return
	}
	ended := make([]string, len(keys))
	for i, k := range keys {
		ended[i] = endedKey(k)
	}
	if ending {
		p.PrefetchSlots(ended, keys)
		return
	}
	p.PrefetchSlots(keys, ended)
}

// slotKeyCount is how many keys a claim of job adds to a transaction for
// its slot records and holder checks (Limits.MaxBatchKeys).
func slotKeyCount(job backends.Job) int {
	if n := len(slotKeys(job)); n > 0 {
		return n + maxHolderChecks
	}
	return 0
}

// slotGate is the slot records a claim transaction of one job reads,
// counts and writes.
type slotGate struct {
	job backends.Job
	// rowJob is the id job's OUTPUT rows are keyed under (Catalog.RowJob).
	rowJob string
	recs   []*backends.Slots
	dirty  []bool
	// live counts, by record, the live claims when the Tx is a
	// LiveCounter (the holders are then not kept); nil otherwise.
	live []int
}

// openGate reads and locks job's slot records, pruning holders that are
// no longer live at now; nil for a job without limits.
func openGate(ctx context.Context, tx backends.Tx, cat *backends.Catalog, job backends.Job, now time.Time, forUpdate bool) (*slotGate, error) {
	keys := slotKeys(job)
	if len(keys) == 0 {
		return nil, nil
	}
	recs, err := readSlots(ctx, tx, keys, forUpdate)
	if err != nil {
		return nil, err
	}
	g := &slotGate{job: job, rowJob: cat.RowJob(job), recs: recs, dirty: make([]bool, len(recs))}
	lc, ht, err := slotStrategy(tx)
	if err != nil {
		return nil, err
	}
	if lc != nil {
		g.live = make([]int, len(recs))
		for i, r := range recs {
			if g.live[i], err = lc.CountLive(ctx, g.jobsOf(r, cat), now); err != nil {
				return nil, err
			}
		}
		return g, nil
	}
	if err := g.dropEnded(ctx, tx, keys); err != nil {
		return nil, err
	}
	if err := g.seed(ctx, tx, ht); err != nil {
		return nil, err
	}
	g.dropLeavers(cat)
	changed, err := pruneHolders(ctx, ht, recs, now)
	for i := range changed {
		g.dirty[i] = g.dirty[i] || changed[i]
	}
	return g, err
}

// seed makes the job's holders in each record that does not account for
// the catalog version of this transaction yet exactly its claims in
// RUNNING. Claims and endings under an older version have all committed
// before the catalog changed (an operation commits only under the catalog
// version it read), and the job may have had no limit then, its endings
// leaving no trace; every claim and ending under this version goes
// through the records, which are locked (or tracked) here: nothing is
// missed, nothing counted twice. Catalog changes are rare: a job's
// RUNNING claims are read once per change.
func (g *slotGate) seed(ctx context.Context, tx backends.Tx, ht backends.HolderTx) error {
	version, err := tx.CatalogVersion(ctx)
	if err != nil {
		return err
	}
	var running []backends.StatusRow
	read := false
	for i, r := range g.recs {
		if v, ok := r.Seeded[g.job.ID]; ok && v == version {
			continue
		}
		if !read {
			if running, err = ht.RunningOutputs(ctx, g.rowJob, g.job.Output); err != nil {
				return err
			}
			read = true
		}
		r.Holders = slices.DeleteFunc(r.Holders, func(h backends.SlotHolder) bool { return h.Job == g.job.ID })
		for _, row := range running {
			r.Holders = append(r.Holders, holderOf(g.job.ID, row))
		}
		if r.Seeded == nil {
			r.Seeded = map[string]int64{}
		}
		r.Seeded[g.job.ID] = version
		g.dirty[i] = true
	}
	return nil
}

// dropEnded removes the holders whose claims ended (slotReleases). The
// ended records are read without a lock, as of the transaction's start or
// later: a token noted since is still counted, on the safe side.
func (g *slotGate) dropEnded(ctx context.Context, tx backends.Tx, keys []string) error {
	ekeys := make([]string, len(keys))
	for i, k := range keys {
		ekeys[i] = endedKey(k)
	}
	ended, err := readSlots(ctx, tx, ekeys, false)
	if err != nil {
		return err
	}
	for i, r := range g.recs {
		if len(ended[i].Ended) == 0 {
			continue
		}
		n := len(r.Holders)
		r.Holders = slices.DeleteFunc(r.Holders, func(h backends.SlotHolder) bool { return slices.Contains(ended[i].Ended, h.Token) })
		g.dirty[i] = g.dirty[i] || len(r.Holders) != n
	}
	return nil
}

// dropLeavers removes from a pool's record the holders of jobs that no
// longer name the pool: their claims no longer count against it.
func (g *slotGate) dropLeavers(cat *backends.Catalog) {
	for i, r := range g.recs {
		if r.Key == backends.JobSlotsKey(g.job.ID) {
			continue
		}
		n := len(r.Holders)
		r.Holders = slices.DeleteFunc(r.Holders, func(h backends.SlotHolder) bool {
			j, ok := cat.Jobs.Lookup(h.Job)
			return !ok || j.Pool != g.job.Pool
		})
		g.dirty[i] = g.dirty[i] || len(r.Holders) != n
	}
}

// holderOf is the holder of job's claim whose OUTPUT row is out: it names
// the job, whose row job (Catalog.RowJob) may be another id.
func holderOf(job string, out backends.StatusRow) backends.SlotHolder {
	return backends.SlotHolder{Job: job, Dataset: out.Dataset, DataID: out.DataID, Token: out.Token, LeaseExpiresAt: out.LeaseExpiresAt}
}

// readSlots reads records by key; a missing one reads as empty.
func readSlots(ctx context.Context, tx backends.Tx, keys []string, forUpdate bool) ([]*backends.Slots, error) {
	got, err := tx.GetSlots(ctx, keys, forUpdate)
	if err != nil {
		return nil, err
	}
	recs := make([]*backends.Slots, len(keys))
	for i, k := range keys {
		recs[i] = got[i]
		if recs[i] == nil {
			recs[i] = &backends.Slots{Key: k}
		}
	}
	return recs, nil
}

// pruneHolders checks, against their OUTPUT rows, the holders whose
// recorded lease has passed (at most maxHolderChecks), drops those that
// are no longer live and records the lease of those that are. It tells
// which records changed.
func pruneHolders(ctx context.Context, tx backends.HolderTx, recs []*backends.Slots, now time.Time) ([]bool, error) {
	changed := make([]bool, len(recs))
	var keys []backends.RowKey
	index := map[backends.RowKey]int{}
	for _, r := range recs {
		for _, h := range r.Holders {
			k := backends.RowKey{Dataset: h.Dataset, DataID: h.DataID, Job: h.Job, Role: backends.RoleOutput}
			if _, seen := index[k]; seen || now.Before(h.LeaseExpiresAt) || len(keys) == maxHolderChecks {
				continue
			}
			index[k] = len(keys)
			keys = append(keys, k)
		}
	}
	if len(keys) == 0 {
		return changed, nil
	}
	rows, known, err := tx.CheckHolders(ctx, keys)
	if err != nil {
		return nil, err
	}
	for i, r := range recs {
		kept := r.Holders[:0]
		for _, h := range r.Holders {
			j, checked := index[backends.RowKey{Dataset: h.Dataset, DataID: h.DataID, Job: h.Job, Role: backends.RoleOutput}]
			if !checked || !known[j] || now.Before(h.LeaseExpiresAt) {
				kept = append(kept, h)
				continue
			}
			changed[i] = true
			if row := rows[j]; row != nil && row.Status == backends.StatusRunning && row.Token == h.Token && now.Before(row.LeaseExpiresAt) {
				h.LeaseExpiresAt = row.LeaseExpiresAt
				kept = append(kept, h)
			}
		}
		r.Holders = kept
	}
	return changed, nil
}

// prefetchGate tells tx what the gate of a claim of job at now reads next
// (prefetchSlots), and with a LivePrefetcher what it counts.
func prefetchGate(tx backends.Tx, cat *backends.Catalog, job backends.Job, now time.Time) {
	keys := slotKeys(job)
	prefetchSlots(tx, keys, false)
	lp, ok := tx.(backends.LivePrefetcher)
	if !ok || len(keys) == 0 {
		return
	}
	g := &slotGate{job: job, rowJob: cat.RowJob(job)}
	jobs := make([][]string, len(keys))
	for i, k := range keys {
		jobs[i] = g.jobsOf(&backends.Slots{Key: k}, cat)
	}
	lp.PrefetchLive(jobs, now)
}

// jobsOf lists the row jobs (Catalog.RowJob) of the jobs whose claims
// hold a slot of rec: g's job for its job record, the jobs naming the pool
// in cat for a pool's.
func (g *slotGate) jobsOf(rec *backends.Slots, cat *backends.Catalog) []string {
	if rec.Key == backends.JobSlotsKey(g.job.ID) {
		return []string{g.rowJob}
	}
	var jobs []string
	for _, j := range cat.Jobs.All() {
		if j.Pool == g.job.Pool {
			jobs = append(jobs, cat.RowJob(j))
		}
	}
	return jobs
}

// used is how many slots of record i are held.
func (g *slotGate) used(i int) int {
	if g.live != nil {
		return g.live[i]
	}
	return len(g.recs[i].Holders)
}

// limit is the most holders rec may have for g's job.
func (g *slotGate) limit(rec *backends.Slots) int {
	if rec.Key == backends.JobSlotsKey(g.job.ID) {
		return g.job.MaxConcurrent
	}
	return rec.Pool.Slots
}

// blockers tells which limits a new claim would exceed (none for a nil
// gate).
func (g *slotGate) blockers(dataid string, status backends.Status) []backends.Blocker {
	if g == nil {
		return nil
	}
	var bs []backends.Blocker
	for i, r := range g.recs {
		if g.used(i) < g.limit(r) {
			continue
		}
		b := backends.Blocker{Dataset: g.job.Output, DataID: dataid, Job: g.job.ID, Kind: backends.BlockerConcurrency, Status: status}
		if r.Key != backends.JobSlotsKey(g.job.ID) {
			b.Pool = g.job.Pool
		}
		bs = append(bs, b)
	}
	return bs
}

// full tells whether no claim of g's job fits now.
func (g *slotGate) full() bool { return len(g.blockers("", backends.StatusNone)) > 0 }

// hold records the claim out as a holder in every record of g, replacing
// the claim it supersedes (a force), named by its token.
func (g *slotGate) hold(out backends.StatusRow, superseded string) {
	if g == nil {
		return
	}
	if g.live != nil {
		if superseded == "" { // a force's claim takes the live claim's row, and its slot
			for i := range g.live {
				g.live[i]++
			}
		}
		return
	}
	for i, r := range g.recs {
		if superseded != "" {
			r.Holders = slices.DeleteFunc(r.Holders, func(h backends.SlotHolder) bool { return h.Token == superseded })
		}
		r.Holders = append(r.Holders, holderOf(g.job.ID, out))
		g.dirty[i] = true
	}
}

// flush writes the records g changed.
func (g *slotGate) flush(ctx context.Context, tx backends.Tx) error {
	if g == nil {
		return nil
	}
	for i, r := range g.recs {
		if g.dirty[i] {
			if err := tx.PutSlots(ctx, *r); err != nil {
				return err
			}
		}
	}
	return nil
}

// slotReleases gathers, in a transaction ending claims, the claims that
// ended, by the slot records they held a slot in. flush notes their
// tokens in each record's ended record ("ended/<key>"), which only
// endings write, rather than in the record itself, which only claims
// write: a claim and an ending never wait for (PostgreSQL) or invalidate
// (etcd) each other. The next claim drops the holders whose tokens it
// finds there.
type slotReleases map[string][]string // record key -> tokens

// add notes that the claim of job with token ended.
func (s slotReleases) add(job backends.Job, token string) {
	for _, k := range slotKeys(job) {
		s[k] = append(s[k], token)
	}
}

// endedKey names the ended record of slot record key.
func endedKey(key string) string { return "ended/" + key }

// flush adds the ended tokens to the ended records, locked in ascending
// key order once all chunk locks are taken, keeping only tokens the slot
// record still lists: a token it no longer lists was dropped by a claim
// (and a slot record gains no holder that has ended already).
func (s slotReleases) flush(ctx context.Context, tx backends.Tx) error {
	if len(s) == 0 {
		return nil
	}
	if lc, _, err := slotStrategy(tx); err != nil || lc != nil {
		return err // a LiveCounter's gates count rows: nothing to note
	}
	keys := make([]string, 0, len(s))
	for k := range s {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	ekeys := make([]string, len(keys))
	for i, k := range keys {
		ekeys[i] = endedKey(k)
	}
	ended, err := readSlots(ctx, tx, ekeys, true)
	if err != nil {
		return err
	}
	recs, err := readSlots(ctx, tx, keys, false)
	if err != nil {
		return err
	}
	for i, e := range ended {
		held := map[string]bool{}
		for _, h := range recs[i].Holders {
			held[h.Token] = true
		}
		var tokens []string
		for _, t := range append(slices.Clone(e.Ended), s[keys[i]]...) {
			if held[t] && !slices.Contains(tokens, t) {
				tokens = append(tokens, t)
			}
		}
		if slices.Equal(tokens, e.Ended) {
			continue
		}
		e.Ended = tokens
		if err := tx.PutSlots(ctx, *e); err != nil {
			return err
		}
	}
	return nil
}
