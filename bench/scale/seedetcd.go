package main

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
)

// etcdStore is the embedded etcd of a `chunklock serve` on a data
// directory the benchmark owns, reached through its client URL.
type etcdStore struct {
	dir    string // the server's --data-dir
	prefix string // the server's key prefix
	cli    *clientv3.Client
	// With a fill: quotaURL is the member whose size is watched, and
	// beforeFull runs once when the database comes within fillMargin of
	// the quota.
	quotaURL   string
	quota      int64
	beforeFull func(ctx context.Context) error
	// batchChunks is about how many chunks the seed writes between two
	// looks at the quota (0: 33,000).
	batchChunks int
}

// etcdPrefix is the key prefix of the embedded store.
const etcdPrefix = "/chunklock/"

func (e *etcdStore) connect(url string) error {
	if e.cli != nil {
		e.cli.Close()
	}
	cli, err := clientv3.New(clientv3.Config{Endpoints: []string{url}, DialTimeout: 10 * time.Second,
		MaxCallSendMsgSize: 2 << 20, Logger: zap.NewNop()})
	if err != nil {
		return err
	}
	e.cli = cli
	return nil
}

func (e *etcdStore) close() {
	if e.cli != nil {
		e.cli.Close()
		e.cli = nil
	}
}

// The stored forms of rows and events (JSON with short names, times in
// Unix microseconds), as the etcd store writes them.
type etcdRow struct {
	S string `json:"s"`
	A int    `json:"a,omitempty"`
	E string `json:"e,omitempty"`
	T string `json:"t,omitempty"`
	F int64  `json:"f,omitempty"`
	U int64  `json:"u,omitempty"`
	N string `json:"n,omitempty"`
}

type etcdEvent struct {
	T  int64  `json:"t"`
	Ac string `json:"ac,omitempty"`
	J  string `json:"j,omitempty"`
	D  string `json:"d"`
	I  string `json:"i"`
	Ro string `json:"ro"`
	Fr string `json:"fr,omitempty"`
	To string `json:"to,omitempty"`
	N  int    `json:"n,omitempty"`
	E  string `json:"e,omitempty"`
}

// ops turns rows and events into the puts that store them: the row, an
// OUTPUT row's entry in the index of OUTPUT rows, a produced chunk's fence
// counter (1: its one claim), the event and its entry in the index of
// events by chunk.
func (e *etcdStore) ops(rows []row, events []event) []clientv3.Op {
	ops := make([]clientv3.Op, 0, 2*len(rows)+len(rows)/2+2*len(events))
	for _, r := range rows {
		role := "OUTPUT"
		if r.input {
			role = "INPUT"
		}
		v, _ := json.Marshal(etcdRow{S: r.status, A: r.attempt, E: r.executor, T: r.token, F: r.fence,
			U: r.updated.UnixMicro(), N: r.ended})
		sk := sortKey(r.dataid)
		ops = append(ops, clientv3.OpPut(e.prefix+"rows/"+r.dataset+"/"+sk+"/"+role+"/"+r.job, string(v)))
		if !r.input {
			// The index of OUTPUT rows (backends/etcd/outputs.go).
			ops = append(ops, clientv3.OpPut(e.prefix+"out/"+r.dataset+"/"+r.job+"/"+sk, ""))
		}
		if !r.input && r.job != "" {
			ops = append(ops, clientv3.OpPut(e.prefix+"fences/"+r.dataset+"/"+sk, strconv.FormatInt(r.fence, 10)))
		}
	}
	for _, ev := range events {
		v, _ := json.Marshal(etcdEvent{T: ev.at.UnixMicro(), Ac: ev.actor, J: ev.job, D: ev.dataset, I: ev.dataid,
			Ro: ev.role, Fr: ev.from, To: ev.to, N: ev.attempt, E: ev.executor})
		seq := fmt.Sprintf("%016x", ev.seq)
		ops = append(ops, clientv3.OpPut(e.prefix+"events/"+seq, string(v)),
			clientv3.OpPut(e.prefix+"evc/"+ev.dataset+"/"+sortKey(ev.dataid)+"/"+seq, ""))
	}
	return ops
}

// seed writes l's history straight into the key layout, in transactions
// of 1,000 puts, four at a time. The server must have declared l's catalog
// through the API, and the store must hold no row, event or candidate yet.
// With fill, a seed that runs out of space (NOSPACE) stops and reports
// how many hours it completed instead of failing.
func (e *etcdStore) seed(ctx context.Context, l layout, fill bool, progress io.Writer) (seedStats, int, error) {
	t0 := time.Now()
	if err := e.checkSeedable(ctx, l); err != nil {
		return seedStats{}, 0, err
	}
	g := newHistory(l, false, uint64(t0.UnixNano()))
	var st seedStats
	step := max(1, cmp.Or(e.batchChunks, 33000)/(2*l.pairs))
	for h0 := 0; h0 < l.hours; h0 += step {
		var rows []row
		var events []event
		h1 := min(h0+step, l.hours)
		for h := h0; h < h1; h++ {
			rows, events = g.hour(h, rows, events)
		}
		if err := e.commit(ctx, e.ops(rows, events)); err != nil {
			if fill && isNoSpace(err) {
				st.took = time.Since(t0)
				return st, h0, nil
			}
			return st, h0, err
		}
		st.rows += len(rows)
		st.events += len(events)
		st.chunks += chunksIn(l, h0, h1)
		reportProgress(progress, "etcd", h1, l.hours, t0)
		if err := e.nearQuota(ctx); err != nil {
			return st, h1, err
		}
	}
	var ops []clientv3.Op
	for _, c := range l.candidates() {
		ops = append(ops, clientv3.OpPut(fmt.Sprintf("%scand/%s/1/%s/%016x", e.prefix, c.job, sortKey(c.dataid), g.rnd.Uint64()), ""))
	}
	if err := e.commit(ctx, ops); err != nil {
		return st, l.hours, fmt.Errorf("seeding candidates: %w", err)
	}
	st.candidates = len(ops)
	// The server counts chunks from the events of its transactions
	// (cnt/); rows written here went around them: drop the counts, so
	// that the server counts the rows again when it restarts.
	if _, err := e.cli.Delete(ctx, e.prefix+"cnt/", clientv3.WithPrefix()); err != nil {
		return st, l.hours, fmt.Errorf("dropping the chunk counts: %w", err)
	}
	st.took = time.Since(t0)
	return st, l.hours, nil
}

// nearQuota runs beforeFull once the database is within fillMargin of
// the quota.
func (e *etcdStore) nearQuota(ctx context.Context) error {
	if e.beforeFull == nil {
		return nil
	}
	db, _, err := e.size(ctx, e.quotaURL)
	if err != nil || db < e.quota-fillMargin(e.quota) {
		return err
	}
	f := e.beforeFull
	e.beforeFull = nil
	return f(ctx)
}

// kvSize is a number of keys and the bytes of their keys and values.
type kvSize struct{ keys, bytes int }

// chunkSizes is what a source chunk (its row, the publish event and its
// index entry) and a produced chunk (its OUTPUT row, fence, the INPUT row
// on its source chunk, four events and their index entries) put in the
// key layout, with the layout's names.
func (e *etcdStore) chunkSizes(l layout) (source, produced kvSize) {
	rows, events := newHistory(layout{pairs: 1, hours: 2, start: l.start}, false, 1).hour(0, nil, nil)
	size := func(rows []row, events []event) kvSize {
		var n kvSize
		for _, op := range e.ops(rows, events) {
			n.keys++
			n.bytes += len(op.KeyBytes()) + len(op.ValueBytes())
		}
		return n
	}
	var sr, pr []row
	var se, pe []event
	for _, r := range rows {
		if r.job == "" {
			sr = append(sr, r)
		} else {
			pr = append(pr, r)
		}
	}
	for _, ev := range events {
		if ev.job == "" {
			se = append(se, ev)
		} else {
			pe = append(pe, ev)
		}
	}
	return size(sr, se), size(pr, pe)
}

// chunksIn counts the chunks of hours [h0, h1).
func chunksIn(l layout, h0, h1 int) int {
	n := l.pairs * (h1 - h0)
	for i := range l.pairs {
		n += max(0, min(h1, l.consumed(i))-h0)
	}
	return n
}

func isNoSpace(err error) bool {
	return err != nil && strings.Contains(err.Error(), "database space exceeded")
}

// commit applies ops in transactions of 1,000, four at a time.
func (e *etcdStore) commit(ctx context.Context, ops []clientv3.Op) error {
	const perTxn, workers = 1000, 4
	batches := make(chan []clientv3.Op)
	var wg sync.WaitGroup
	var mu sync.Mutex
	var first error
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for b := range batches {
				if _, err := e.cli.Txn(ctx).Then(b...).Commit(); err != nil {
					mu.Lock()
					first = cmpOr(first, err)
					mu.Unlock()
				}
			}
		}()
	}
	for i := 0; i < len(ops); i += perTxn {
		batches <- ops[i:min(i+perTxn, len(ops))]
	}
	close(batches)
	wg.Wait()
	return first
}

func cmpOr(a, b error) error {
	if a != nil {
		return a
	}
	return b
}

// checkSeedable refuses a store whose catalog is not l's or that holds
// history already.
func (e *etcdStore) checkSeedable(ctx context.Context, l layout) error {
	count := func(p string) (int64, error) {
		r, err := e.cli.Get(ctx, e.prefix+p, clientv3.WithPrefix(), clientv3.WithCountOnly())
		if err != nil {
			return 0, err
		}
		return r.Count, nil
	}
	var n [5]int64
	for i, p := range []string{"datasets/", "jobs/", "rows/", "events/", "evq/"} {
		c, err := count(p)
		if err != nil {
			return fmt.Errorf("reading the store: %w", err)
		}
		n[i] = c
	}
	if n[0] != int64(2*l.pairs) || n[1] != int64(l.pairs) {
		return fmt.Errorf("the store has %d datasets and %d jobs, the layout %d and %d: declare the catalog through the API first",
			n[0], n[1], 2*l.pairs, l.pairs)
	}
	if n[2]+n[3]+n[4] > 0 {
		return errors.New("the store already holds status rows or events: seed an empty store only")
	}
	return nil
}

// size is the database's size as etcd reports it (the file, free pages
// included) and the part in use.
func (e *etcdStore) size(ctx context.Context, endpoint string) (db, inUse int64, err error) {
	st, err := e.cli.Status(ctx, endpoint)
	if err != nil {
		return 0, 0, err
	}
	return st.DbSize, st.DbSizeInUse, nil
}

// dirSize is the data directory's size on disk (allocated blocks, as du
// counts them).
func dirSize(dir string) int64 {
	var n int64
	_ = filepath.Walk(dir, func(_ string, fi os.FileInfo, err error) error {
		if err != nil || !fi.Mode().IsRegular() {
			return nil
		}
		if st, ok := fi.Sys().(*syscall.Stat_t); ok {
			n += st.Blocks * 512
		} else {
			n += fi.Size()
		}
		return nil
	})
	return n
}
