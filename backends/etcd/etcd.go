package etcd

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

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

	commits, conflicts        atomic.Int64 // Update outcomes, for tests and diagnostics
	resolved, resolvedApplied atomic.Int64 // commits whose answer was lost, and of those the ones that happened
	watches                   atomic.Int64 // etcd watches open for WatchEvents subscribers
	hot                       sync.Map     // job -> time.Time of the last lost race on its candidates
	inflight                  sync.Map     // job -> *atomic.Int64: Updates reading its candidates
	resv                      reservations // candidates held by this process's transactions (batch.go)
	hints                     headHints    // where each job's candidate reads end (batch.go)

	leaseMu sync.Mutex
	lease   clientv3.LeaseID
	leaseAt time.Time
}

var (
	_ backends.Backend          = (*Backend)(nil)
	_ backends.CatalogVersioner = (*Backend)(nil)
)

// Open connects to the etcd cluster of cfg and returns the Store on it.
// Closing the store closes the connection.
func Open(ctx context.Context, cfg Config) (backends.Store, error) {
	b, err := openBackend(ctx, cfg)
	if err != nil {
		return nil, err
	}
	return backends.New(b, b.cfg.Clock), nil
}

// openBackend connects to the cluster of cfg; the Backend owns the client.
func openBackend(ctx context.Context, cfg Config) (*Backend, error) {
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

// OpenClient returns the Store on an existing client (tests, the embedded
// server). cfg.Endpoints, credentials and TLS are ignored; closing the store
// leaves the client open.
func OpenClient(ctx context.Context, cli *clientv3.Client, cfg Config) (backends.Store, error) {
	cfg.Endpoints = cli.Endpoints()
	if len(cfg.Endpoints) == 0 {
		cfg.Endpoints = []string{"client"}
	}
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg = cfg.withDefaults()
	b, err := newBackend(ctx, cli, false, cfg)
	if err != nil {
		return nil, err
	}
	return backends.New(b, cfg.Clock), nil
}

// NewBackend returns the Backend itself on an existing client, for callers
// that build the Store with their own clock. Close it when done.
func NewBackend(ctx context.Context, cli *clientv3.Client, cfg Config) (*Backend, error) {
	cfg.Endpoints = cli.Endpoints()
	if len(cfg.Endpoints) == 0 {
		cfg.Endpoints = []string{"client"}
	}
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	return newBackend(ctx, cli, false, cfg.withDefaults())
}

func newBackend(ctx context.Context, cli *clientv3.Client, own bool, cfg Config) (*Backend, error) {
	bg, stop := context.WithCancel(context.Background())
	b := &Backend{cli: cli, ownCli: own, cfg: cfg, p: cfg.Prefix, bg: bg, stop: stop, kick: make(chan struct{}, 1)}
	if err := b.Ping(ctx); err != nil {
		stop()
		return nil, err
	}
	if err := b.claimProducers(ctx); err != nil {
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

func (b *Backend) get(ctx context.Context, key string, opts ...clientv3.OpOption) (*clientv3.GetResponse, error) {
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
	if b.closed.Load() {
		return nil, backends.Unavailable(nil, "etcd store is closed")
	}
	rc, cancel := b.rctx(ctx)
	defer cancel()
	return b.cli.Txn(rc).If(cmps...).Then(then...).Else(els...).Commit()
}

// unavailable wraps a failure to reach etcd.
func unavailable(cause error, format string, args ...any) error {
	return backends.Unavailable(cause, format, args...)
}

// codeOf returns the gRPC code of an etcd client error.
func codeOf(err error) codes.Code {
	var ee rpctypes.EtcdError
	if errors.As(err, &ee) {
		return ee.Code()
	}
	if s, ok := status.FromError(err); ok {
		return s.Code()
	}
	return codes.Unknown
}

// mapErr turns an etcd client error into what the engine expects:
// UNAVAILABLE for anything a retry may cure, a plain error otherwise.
func mapErr(err error, what string) error {
	if err == nil {
		return nil
	}
	var be *backends.Error
	if errors.As(err, &be) {
		return err
	}
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return unavailable(err, "etcd did not answer in time (%s); retry", what)
	}
	switch {
	case errors.Is(err, rpctypes.ErrTooManyOps):
		return fmt.Errorf("etcd refused a transaction with too many operations (%s): raise the cluster's --max-txn-ops and Config.MaxTxnOps: %w", what, err)
	case errors.Is(err, rpctypes.ErrRequestTooLarge):
		return fmt.Errorf("etcd refused a request as too large (%s): raise the cluster's --max-request-bytes: %w", what, err)
	case errors.Is(err, rpctypes.ErrNoSpace):
		return fmt.Errorf("etcd is out of space (%s): compact and defragment it, or raise --quota-backend-bytes, then disarm the NOSPACE alarm: %w", what, err)
	}
	switch codeOf(err) {
	case codes.Unavailable, codes.DeadlineExceeded, codes.Canceled, codes.Aborted, codes.ResourceExhausted:
		return unavailable(err, "etcd is unavailable (%s); retry", what)
	case codes.Unauthenticated, codes.PermissionDenied:
		return fmt.Errorf("etcd refused access (%s): check the user, password and its role's permissions on the key prefix: %w", what, err)
	}
	return fmt.Errorf("etcd %s: %w", what, err)
}

// unknownOutcome tells whether a failed commit may still have been applied.
func unknownOutcome(err error) bool {
	switch codeOf(err) {
	case codes.InvalidArgument, codes.FailedPrecondition, codes.PermissionDenied, codes.Unauthenticated,
		codes.ResourceExhausted, codes.OutOfRange, codes.NotFound, codes.AlreadyExists:
		return false
	}
	return true
}

func randomID() string {
	var b [8]byte
	if _, err := rand.Read(b[:]); err != nil {
		panic("chunklock: no randomness: " + err.Error())
	}
	return hex.EncodeToString(b[:])
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

// ---- catalog ----

// catalogVersionKey is catalog/version. Every Txn that changes a dataset
// or a job also puts this key (its value names the change), so its
// ModRevision is the catalog version: it grows with every change.
func (b *Backend) catalogVersionKey() string { return b.key("catalog", "version") }

// bumpCatalog is the op that makes a catalog change a new version.
func (b *Backend) bumpCatalog(what string) clientv3.Op {
	return clientv3.OpPut(b.catalogVersionKey(), what)
}

func (b *Backend) Catalog(ctx context.Context) ([]backends.Dataset, []backends.Job, error) {
	ds, js, _, err := b.VersionedCatalog(ctx)
	return ds, js, err
}

// VersionedCatalog reads every dataset, every job and the catalog version
// at one revision.
func (b *Backend) VersionedCatalog(ctx context.Context) ([]backends.Dataset, []backends.Job, int64, error) {
	if b.closed.Load() {
		return nil, nil, 0, backends.Unavailable(nil, "etcd store is closed")
	}
	resp, err := b.txn(ctx, nil, []clientv3.Op{
		clientv3.OpGet(b.key("datasets")+"/", clientv3.WithPrefix()),
		clientv3.OpGet(b.key("jobs")+"/", clientv3.WithPrefix()),
		clientv3.OpGet(b.catalogVersionKey(), clientv3.WithKeysOnly()),
	}, nil)
	if err != nil {
		return nil, nil, 0, mapErr(err, "read catalog")
	}
	ds := []backends.Dataset{}
	for _, kv := range resp.Responses[0].GetResponseRange().Kvs {
		var d backends.Dataset
		if err := json.Unmarshal(kv.Value, &d); err != nil {
			return nil, nil, 0, fmt.Errorf("etcd: dataset at %s is corrupt: %w", kv.Key, err)
		}
		ds = append(ds, d)
	}
	js := []backends.Job{}
	for _, kv := range resp.Responses[1].GetResponseRange().Kvs {
		var j backends.Job
		if err := json.Unmarshal(kv.Value, &j); err != nil {
			return nil, nil, 0, fmt.Errorf("etcd: job at %s is corrupt: %w", kv.Key, err)
		}
		js = append(js, j)
	}
	var version int64
	if kvs := resp.Responses[2].GetResponseRange().Kvs; len(kvs) == 1 {
		version = kvs[0].ModRevision
	}
	return ds, js, version, nil
}

// putKeepingCreated stores v at key, copying CreatedAt from the value
// already there, and makes a new catalog version; a concurrent change makes
// it start over.
func (b *Backend) putKeepingCreated(ctx context.Context, key string, v any, created func(old []byte) error) ([]byte, int64, error) {
	for {
		resp, err := b.get(ctx, key)
		if err != nil {
			return nil, 0, err
		}
		cmp := clientv3.Compare(clientv3.CreateRevision(key), "=", 0)
		if len(resp.Kvs) == 1 {
			if err := created(resp.Kvs[0].Value); err != nil {
				return nil, 0, err
			}
			cmp = clientv3.Compare(clientv3.ModRevision(key), "=", resp.Kvs[0].ModRevision)
		}
		val, err := json.Marshal(v)
		if err != nil {
			return nil, 0, err
		}
		tr, err := b.txn(ctx, []clientv3.Cmp{cmp}, []clientv3.Op{clientv3.OpPut(key, string(val)), b.bumpCatalog(strings.TrimPrefix(key, b.p))}, nil)
		if err != nil {
			return nil, 0, mapErr(err, "write "+key)
		}
		if tr.Succeeded {
			return val, tr.Header.Revision, nil
		}
	}
}

func (b *Backend) PutDataset(ctx context.Context, d backends.Dataset) (backends.Dataset, error) {
	_, _, err := b.putKeepingCreated(ctx, b.key("datasets", d.ID), &d, func(old []byte) error {
		var o backends.Dataset
		if err := json.Unmarshal(old, &o); err != nil {
			return fmt.Errorf("etcd: dataset %q is corrupt: %w", d.ID, err)
		}
		d.CreatedAt = o.CreatedAt
		return nil
	})
	return d, err
}

// producerKey is producers/<dataset>: the id of the one job whose output
// the dataset is.
func (b *Backend) producerKey(dataset string) string { return b.key("producers", dataset) }

// PutJob stores the job and claims its output in producers/<output>, in one
// Txn guarded by the job key and by the producers keys it reads: a dataset
// that another job produces is refused with ALREADY_EXISTS, even when two
// servers define two producers at once. A job moving to another output
// gives up its old producers entry in the same Txn.
//
// When the job needs a backfill (enqueue, a new job, changed inputs, or a
// backfill of an earlier call still pending), the same Txn writes the
// marker backfill/<job>; the backfill runs after the commit, reading the
// rows at the commit's revision or later, and clears the marker when it is
// done. A backfill that fails half way stays pending: the next PutJob of
// the job, or any backend's sweep, runs it again (candidates are hints, so
// the ones added twice do no harm).
//
// The same Txn makes a new catalog version. So a Publish or a completion
// racing with the job either commits after it, and then its transaction
// saw the new version (the engine retried it with the new catalog, which
// adds the job's candidate), or committed before it, and then the
// backfill, which reads at the job's commit revision or later, finds the
// chunk READY.
func (b *Backend) PutJob(ctx context.Context, j backends.Job, enqueue bool) (backends.Job, error) {
	j.Inputs = slices.Clone(j.Inputs)
	j.Env = slices.Clone(j.Env)
	jobKey, outKey, markKey := b.key("jobs", j.ID), b.producerKey(j.Output), b.backfillKey(j.ID)
	var rev int64
	var pending bool
	for {
		resp, err := b.txn(ctx, nil, []clientv3.Op{clientv3.OpGet(jobKey), clientv3.OpGet(outKey), clientv3.OpGet(markKey, clientv3.WithKeysOnly())}, nil)
		if err != nil {
			return backends.Job{}, mapErr(err, "read job "+j.ID)
		}
		var cmps []clientv3.Cmp
		var ops []clientv3.Op
		var old *backends.Job
		if kvs := resp.Responses[0].GetResponseRange().Kvs; len(kvs) == 1 {
			old = new(backends.Job)
			if err := json.Unmarshal(kvs[0].Value, old); err != nil {
				return backends.Job{}, fmt.Errorf("etcd: job %q is corrupt: %w", j.ID, err)
			}
			j.CreatedAt = old.CreatedAt
			cmps = append(cmps, clientv3.Compare(clientv3.ModRevision(jobKey), "=", kvs[0].ModRevision))
		} else {
			cmps = append(cmps, clientv3.Compare(clientv3.CreateRevision(jobKey), "=", 0))
		}
		if kvs := resp.Responses[1].GetResponseRange().Kvs; len(kvs) == 1 {
			if p := string(kvs[0].Value); p != j.ID {
				return backends.Job{}, backends.AlreadyExists("dataset %q is already produced by job %q; a dataset has one producer", j.Output, p)
			}
			cmps = append(cmps, clientv3.Compare(clientv3.ModRevision(outKey), "=", kvs[0].ModRevision))
		} else {
			cmps = append(cmps, clientv3.Compare(clientv3.CreateRevision(outKey), "=", 0))
			ops = append(ops, clientv3.OpPut(outKey, j.ID))
		}
		if old != nil && old.Output != j.Output {
			oldKey := b.producerKey(old.Output)
			r, err := b.get(ctx, oldKey, clientv3.WithRev(resp.Header.Revision))
			if err != nil {
				return backends.Job{}, err
			}
			if len(r.Kvs) == 1 && string(r.Kvs[0].Value) == j.ID {
				cmps = append(cmps, clientv3.Compare(clientv3.ModRevision(oldKey), "=", r.Kvs[0].ModRevision))
				ops = append(ops, clientv3.OpDelete(oldKey))
			}
		}
		marked := len(resp.Responses[2].GetResponseRange().Kvs) == 1
		pending = len(j.Inputs) > 0 && (enqueue || marked || old == nil || !slices.Equal(old.Inputs, j.Inputs))
		switch {
		case pending:
			ops = append(ops, clientv3.OpPut(markKey, backfillMarker(time.Now())))
		case marked:
			ops = append(ops, clientv3.OpDelete(markKey)) // no inputs: nothing to backfill
		}
		val, err := json.Marshal(&j)
		if err != nil {
			return backends.Job{}, err
		}
		ops = append(ops, clientv3.OpPut(jobKey, string(val)), b.bumpCatalog("jobs/"+j.ID))
		tr, err := b.txn(ctx, cmps, ops, nil)
		if err != nil {
			return backends.Job{}, mapErr(err, "write job "+j.ID)
		}
		if tr.Succeeded {
			rev = tr.Header.Revision
			break
		}
	}
	if pending {
		if err := b.backfill(ctx, j, rev); err != nil {
			return backends.Job{}, fmt.Errorf("job %q is stored but making its READY input chunks claimable failed (upserting the job again finishes it): %w", j.ID, err)
		}
		if err := b.clearBackfill(ctx, j.ID, rev); err != nil {
			return backends.Job{}, err
		}
	}
	return j, nil
}

// backfillKey is backfill/<job>, present while the job's backfill is not
// known to be complete.
func (b *Backend) backfillKey(job string) string { return b.key("backfill", job) }

// backfillVal is the value of a backfill marker.
type backfillVal struct {
	T int64 `json:"t"` // when it was written, Unix microseconds (wall clock of the writer)
}

func backfillMarker(now time.Time) string {
	v, _ := json.Marshal(backfillVal{T: now.UnixMicro()})
	return string(v)
}

// clearBackfill removes the job's backfill marker if it is still the one
// written at rev: a newer PutJob's marker stays for its own backfill.
func (b *Backend) clearBackfill(ctx context.Context, job string, rev int64) error {
	key := b.backfillKey(job)
	if _, err := b.txn(ctx, []clientv3.Cmp{clientv3.Compare(clientv3.ModRevision(key), "=", rev)}, []clientv3.Op{clientv3.OpDelete(key)}, nil); err != nil {
		return mapErr(err, "clear the backfill marker of job "+job)
	}
	return nil
}

// Backfill markers written before staleBackfill ago are taken over by the
// sweep of any backend, which runs at Open and every backfillSweepEvery.
const (
	staleBackfill      = time.Minute
	backfillSweepEvery = 30 * time.Second
)

// backfillSweeper finishes the backfills their servers left pending.
func (b *Backend) backfillSweeper() {
	for {
		_ = b.sweepBackfills(b.bg, time.Now().Add(-staleBackfill)) // retried on the next round
		select {
		case <-b.bg.Done():
			return
		case <-time.After(backfillSweepEvery):
		}
	}
}

// sweepBackfills runs every pending backfill whose marker was written
// before staleBefore (a younger one may still be running where it was
// written), reading rows now, and clears the markers it finished.
func (b *Backend) sweepBackfills(ctx context.Context, staleBefore time.Time) error {
	base := b.key("backfill") + "/"
	resp, err := b.get(ctx, base, clientv3.WithPrefix())
	if err != nil {
		return err
	}
	var errs []error
	for _, kv := range resp.Kvs {
		id := strings.TrimPrefix(string(kv.Key), base)
		var m backfillVal
		if json.Unmarshal(kv.Value, &m) == nil && time.UnixMicro(m.T).After(staleBefore) {
			continue
		}
		r, err := b.get(ctx, b.key("jobs", id))
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if len(r.Kvs) == 1 {
			var j backends.Job
			if err := json.Unmarshal(r.Kvs[0].Value, &j); err != nil {
				errs = append(errs, fmt.Errorf("etcd: job %q is corrupt: %w", id, err))
				continue
			}
			if len(j.Inputs) > 0 {
				if err := b.backfill(ctx, j, 0); err != nil {
					errs = append(errs, err)
					continue
				}
			}
		}
		if err := b.clearBackfill(ctx, id, kv.ModRevision); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// claimProducers records the producer of every job's output that has no
// producers entry yet (a store written before these entries existed). When
// two stored jobs produce one dataset, the first in id order keeps it.
func (b *Backend) claimProducers(ctx context.Context) error {
	resp, err := b.txn(ctx, nil, []clientv3.Op{
		clientv3.OpGet(b.key("jobs")+"/", clientv3.WithPrefix()),
		clientv3.OpGet(b.key("producers")+"/", clientv3.WithPrefix(), clientv3.WithKeysOnly()),
	}, nil)
	if err != nil {
		return mapErr(err, "read jobs and producers")
	}
	have := map[string]bool{}
	for _, kv := range resp.Responses[1].GetResponseRange().Kvs {
		have[string(kv.Key)] = true
	}
	for _, kv := range resp.Responses[0].GetResponseRange().Kvs {
		var j backends.Job
		if err := json.Unmarshal(kv.Value, &j); err != nil {
			return fmt.Errorf("etcd: job at %s is corrupt: %w", kv.Key, err)
		}
		key := b.producerKey(j.Output)
		if j.Output == "" || have[key] {
			continue
		}
		have[key] = true
		if _, err := b.txn(ctx, []clientv3.Cmp{clientv3.Compare(clientv3.CreateRevision(key), "=", 0)},
			[]clientv3.Op{clientv3.OpPut(key, j.ID)}, nil); err != nil {
			return mapErr(err, "record the producer of dataset "+j.Output)
		}
	}
	return nil
}

// backfill adds a candidate for job at every dataid whose first input chunk
// is READY, reading the rows as of revision rev (the job's own write; 0:
// now) and writing the candidates in transactions of at most MaxTxnOps puts.
func (b *Backend) backfill(ctx context.Context, j backends.Job, rev int64) error {
	_, jobs, err := b.Catalog(ctx)
	if err != nil {
		return err
	}
	in := j.Inputs[0]
	producer := ""
	for _, o := range jobs {
		if o.Output == in {
			producer = o.ID
		}
	}
	var batch []clientv3.Op
	flush := func() error {
		if len(batch) == 0 {
			return nil
		}
		if b.hookBackfillFlush != nil {
			if err := b.hookBackfillFlush(); err != nil {
				return err
			}
		}
		if _, err := b.txn(ctx, nil, batch, nil); err != nil {
			return mapErr(err, "add candidates for job "+j.ID)
		}
		batch = batch[:0]
		return nil
	}
	base := b.key("rows", in) + "/"
	err = b.scan(ctx, base, clientv3.GetPrefixRangeEnd(base), rev, func(key, val []byte, _ int64) (bool, error) {
		k, ok := b.parseRowKey(string(key))
		if !ok || k.Role != backends.RoleOutput || k.Job != producer {
			return true, nil
		}
		r, err := decodeRow(k, val)
		if err != nil {
			return false, err
		}
		if r.Status != backends.StatusReady {
			return true, nil
		}
		batch = append(batch, clientv3.OpPut(b.candKey(backends.Candidate{Job: j.ID, DataID: k.DataID}), ""))
		if len(batch) >= b.cfg.MaxTxnOps {
			return true, flush()
		}
		return true, nil
	})
	if err != nil {
		return err
	}
	return flush()
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

// ---- credentials ----

func (b *Backend) PutCredential(ctx context.Context, c backends.Credential) error {
	val, err := json.Marshal(c)
	if err != nil {
		return err
	}
	if b.closed.Load() {
		return backends.Unavailable(nil, "etcd store is closed")
	}
	rc, cancel := b.rctx(ctx)
	defer cancel()
	if _, err := b.cli.Put(rc, b.key("creds", c.Job, c.Dataset), string(val)); err != nil {
		return mapErr(err, "write credential")
	}
	return nil
}

func (b *Backend) Credentials(ctx context.Context, job string) ([]backends.Credential, error) {
	resp, err := b.get(ctx, b.key("creds", job)+"/", clientv3.WithPrefix())
	if err != nil {
		return nil, err
	}
	var out []backends.Credential
	for _, kv := range resp.Kvs {
		var c backends.Credential
		if err := json.Unmarshal(kv.Value, &c); err != nil {
			return nil, fmt.Errorf("etcd: credential at %s is corrupt: %w", kv.Key, err)
		}
		out = append(out, c)
	}
	return out, nil
}
