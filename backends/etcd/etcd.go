package etcd

import (
	"context"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"github.com/chunklock/chunklock/backends"
)

// Backend implements backends.Backend on etcd. Build it with Open or
// OpenClient.
type Backend struct {
	cli    *clientv3.Client
	ownCli bool
	cfg    Config
	p      string // key prefix

	bg     context.Context // lives until Close
	stop   context.CancelFunc
	wg     sync.WaitGroup
	kick   chan struct{} // wakes the event mover
	closed atomic.Bool

	// closeMu orders Close with the start of background goroutines: a
	// goroutine is added to wg only while closed is false, under closeMu,
	// so Close's wg.Wait (after it set closed under closeMu) waits for it.
	closeMu sync.Mutex
	// hookGoBackground, set by tests only, runs inside goBackground between
	// the closed check and wg.Add.
	hookGoBackground func()
	// hookBackfillFlush, set by tests only, runs before each batch of
	// backfilled candidates; an error fails the batch.
	hookBackfillFlush func() error

	commits, conflicts        atomic.Int64              // Update outcomes, for tests and diagnostics
	requests                  atomic.Int64              // reads and Txns sent (get, txn) for callers, for tests and diagnostics
	bgRequests                atomic.Int64              // those the backend's own background work sent (under b.bg)
	resolved, resolvedApplied atomic.Int64              // commits whose answer was lost, and of those the ones that happened
	watches                   atomic.Int64              // etcd watches open for WatchEvents subscribers
	counts                    atomic.Pointer[knownBase] // the chunk counts' base, once known (counts.go)
	// fenceFloor is the fence every chunk without a counter of its own
	// starts above (fencefloor/global): a store loaded from one that
	// numbers all chunks from one counter (PostgreSQL) may not know every
	// chunk that counter fenced, once deletions and retention took their
	// rows and events. Written only by a load, read at open.
	fenceFloor atomic.Int64
	// holdsSince is the time of marks/holds-checked (marks.go), read at open.
	holdsSince atomic.Int64 // microseconds
	// outIndexed: every OUTPUT row has its out/ key (outputs.go).
	outIndexed atomic.Bool
	loadMarked atomic.Bool // markLoaded ran

	slots backends.SlotCodec // decodes slot records, copying one read back as last seen
	resv  reservations       // candidates held by this process's transactions (batch.go)
	hints headHints          // where each job's candidate reads end (batch.go)

	leaseMu sync.Mutex
	lease   clientv3.LeaseID
	leaseAt time.Time
}

// What the backend implements (backends/backend.go): a changed signature
// must fail the build, not turn a capability off.
var (
	_ backends.Backend        = (*Backend)(nil)
	_ backends.Tx             = (*tx)(nil)
	_ backends.HolderTx       = (*tx)(nil)
	_ backends.SlotPrefetcher = (*tx)(nil)
)

// Open connects to the etcd cluster of cfg and returns the Backend on it
// (engine.New makes it a Store). Closing it closes the connection.
func Open(ctx context.Context, cfg Config) (*Backend, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg = cfg.withDefaults()
	cli, err := clientv3.New(clientv3.Config{
		Endpoints:   cfg.Endpoints,
		DialTimeout: cfg.DialTimeout,
		Username:    cfg.Username,
		Password:    cfg.Password,
		TLS:         cfg.TLS,
		Logger:      zap.NewNop(),
		Context:     context.WithoutCancel(ctx),
		// Detect a dead member quickly so requests move to another one.
		DialKeepAliveTime:    5 * time.Second,
		DialKeepAliveTimeout: 3 * time.Second,
		// Send what the cluster takes (the client's own default is 2 MiB).
		MaxCallSendMsgSize: sendLimit(cfg),
	})
	if err != nil {
		return nil, unavailable(err, "cannot connect to etcd at %s", strings.Join(cfg.Endpoints, ","))
	}
	b, err := newBackend(ctx, cli, true, cfg)
	if err != nil {
		cli.Close()
		return nil, err
	}
	return b, nil
}

// OpenClient returns the Backend on an existing client (tests, the
// embedded server). cfg.Endpoints, credentials and TLS are ignored; closing
// the backend leaves the client open.
func OpenClient(ctx context.Context, cli *clientv3.Client, cfg Config) (*Backend, error) {
	cfg.Endpoints = cli.Endpoints()
	if len(cfg.Endpoints) == 0 {
		cfg.Endpoints = []string{"client"}
	}
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	return newBackend(ctx, cli, false, cfg.withDefaults())
}

// Clock is the system clock.
func (b *Backend) Clock() backends.Clock { return backends.SystemClock{} }

func newBackend(ctx context.Context, cli *clientv3.Client, own bool, cfg Config) (*Backend, error) {
	bg, stop := context.WithCancel(context.WithValue(context.Background(), backgroundKey{}, true))
	b := &Backend{cli: cli, ownCli: own, cfg: cfg, p: cfg.Prefix, bg: bg, stop: stop, kick: make(chan struct{}, 1)}
	if err := b.Ping(ctx); err != nil {
		stop()
		return nil, err
	}
	if err := b.claimProducers(ctx); err != nil {
		stop()
		return nil, err
	}
	if err := b.readFenceFloor(ctx); err != nil {
		stop()
		return nil, err
	}
	if err := b.markHolds(ctx); err != nil {
		stop()
		return nil, err
	}
	if err := b.markOutputsIndexed(ctx); err != nil {
		stop()
		return nil, err
	}
	b.goBackground(b.mover)
	b.goBackground(b.backfillSweeper)
	return b, nil
}

// String describes the backend for logs.
func (b *Backend) String() string {
	return "etcd " + strings.Join(b.cfg.Endpoints, ",") + " prefix " + b.p
}

// Client returns the etcd client the backend uses.
func (b *Backend) Client() *clientv3.Client { return b.cli }

// Prefix returns the key prefix of every key the backend writes.
func (b *Backend) Prefix() string { return b.p }

func (b *Backend) key(parts ...string) string { return b.p + strings.Join(parts, "/") }

// rctx bounds one etcd request by RequestTimeout unless ctx ends earlier.
func (b *Backend) rctx(ctx context.Context) (context.Context, context.CancelFunc) {
	if d, ok := ctx.Deadline(); ok && time.Until(d) <= b.cfg.RequestTimeout {
		return ctx, func() {}
	}
	return context.WithTimeout(ctx, b.cfg.RequestTimeout)
}

// backgroundKey marks b.bg, the context of the backend's own background
// work (the event mover and its count folds, the sweepers): its requests
// are counted apart from the callers'.
type backgroundKey struct{}

func (b *Backend) countRequest(ctx context.Context) {
	if ctx.Value(backgroundKey{}) != nil {
		b.bgRequests.Add(1)
	} else {
		b.requests.Add(1)
	}
}

func (b *Backend) get(ctx context.Context, key string, opts ...clientv3.OpOption) (*clientv3.GetResponse, error) {
	b.countRequest(ctx)
	if b.closed.Load() {
		return nil, backends.Unavailable(nil, "etcd store is closed")
	}
	rc, cancel := b.rctx(ctx)
	defer cancel()
	resp, err := b.cli.Get(rc, key, opts...)
	if err != nil {
		return nil, mapErr(err, "read "+key)
	}
	return resp, nil
}

func (b *Backend) txn(ctx context.Context, cmps []clientv3.Cmp, then []clientv3.Op, els []clientv3.Op) (*clientv3.TxnResponse, error) {
	b.countRequest(ctx)
	if b.closed.Load() {
		return nil, backends.Unavailable(nil, "etcd store is closed")
	}
	rc, cancel := b.rctx(ctx)
	defer cancel()
	return b.cli.Txn(rc).If(cmps...).Then(then...).Else(els...).Commit()
}

// Ping checks that a quorum answers: a linearizable read needs the leader.
func (b *Backend) Ping(ctx context.Context) error {
	_, err := b.get(ctx, b.key("ping"), clientv3.WithCountOnly())
	return err
}

// goBackground runs fn in a goroutine that Close waits for, unless the
// backend is closed already (false).
func (b *Backend) goBackground(fn func()) bool {
	b.closeMu.Lock()
	defer b.closeMu.Unlock()
	if b.closed.Load() {
		return false
	}
	if b.hookGoBackground != nil {
		b.hookGoBackground()
	}
	b.wg.Add(1)
	go func() {
		defer b.wg.Done()
		fn()
	}()
	return true
}

// Close stops the event mover and watchers, revokes the current
// commit-marker lease (older ones expire on their own) and closes the client
// when Open made it.
func (b *Backend) Close() error {
	b.closeMu.Lock()
	was := b.closed.Swap(true)
	b.closeMu.Unlock()
	if was {
		return nil
	}
	b.stop()
	b.wg.Wait()
	b.leaseMu.Lock()
	lease := b.lease
	b.lease = 0
	b.leaseMu.Unlock()
	if lease != 0 {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		_, _ = b.cli.Revoke(ctx, lease)
		cancel()
	}
	if b.ownCli {
		return b.cli.Close()
	}
	return nil
}

// leaseID returns the lease commit markers are attached to. A marker must
// outlive the resolution of its commit (RequestTimeout + ResolveTimeout),
// and no longer: so a lease lives twice that (at least a minute), without
// keep-alives, and serves new commits only during its first quarter; then
// a new one is granted and the old one expires with its markers.
func (b *Backend) leaseID(ctx context.Context) (clientv3.LeaseID, error) {
	b.leaseMu.Lock()
	defer b.leaseMu.Unlock()
	ttl := max(2*(b.cfg.RequestTimeout+b.cfg.ResolveTimeout), time.Minute)
	if b.lease != 0 && time.Since(b.leaseAt) < ttl/4 {
		return b.lease, nil
	}
	rc, cancel := b.rctx(ctx)
	defer cancel()
	g, err := b.cli.Grant(rc, int64(ttl/time.Second))
	if err != nil {
		return 0, mapErr(err, "grant commit-marker lease")
	}
	b.lease, b.leaseAt = g.ID, time.Now()
	return g.ID, nil
}

// dropLease forgets a lease etcd no longer knows.
func (b *Backend) dropLease(id clientv3.LeaseID) {
	b.leaseMu.Lock()
	if b.lease == id {
		b.lease = 0
	}
	b.leaseMu.Unlock()
}

// scan calls fn for every key in [from, to) at revision rev (0: now), in
// key order, a page at a time, until fn returns false. Every page is read
// at the revision of the first one.
func (b *Backend) scan(ctx context.Context, from, to string, rev int64, fn func(key, val []byte, modRev int64) (bool, error)) error {
	const page = 500
	for {
		resp, err := b.get(ctx, from, clientv3.WithRange(to), clientv3.WithLimit(page), clientv3.WithRev(rev))
		if err != nil {
			return err
		}
		if rev == 0 {
			rev = resp.Header.Revision
		}
		for _, kv := range resp.Kvs {
			more, err := fn(kv.Key, kv.Value, kv.ModRevision)
			if err != nil || !more {
				return err
			}
		}
		if !resp.More || len(resp.Kvs) == 0 {
			return nil
		}
		from = string(resp.Kvs[len(resp.Kvs)-1].Key) + "\x00"
	}
}
