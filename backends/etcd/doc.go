// Package etcd stores chunklock in etcd (v3 API): an external cluster, or the
// single-member server of package embedded that chunklock runs by default.
//
// Every operation of the engine runs in Backend.Update as one optimistic
// transaction: reads go to etcd at one snapshot revision and are remembered
// with their ModRevision (or as missing), writes are buffered, and the commit
// is a single etcd Txn whose guard compares every key read (ModRevision equal
// to what was read, CreateRevision 0 for a key that was missing) and whose
// success branch applies every write. When the guard fails, another commit
// touched something this one read, and the engine's function runs again on
// fresh data. The result is serializable: two racers for one chunk both read
// its rows, only the first commit wins, the second re-reads and sees the claim.
//
// # Key layout
//
// Every key starts with Config.Prefix (default "/chunklock/"), so several
// installations can share a cluster. <sk> is backends.SortKey(dataid): a
// three-digit length then the dataid, so that byte order of keys is the
// shortlex order of dataids. Dataset and job ids are slugs and contain no
// '/'.
//
//	datasets/<dataset>                    dataset definition (JSON)
//	jobs/<job>                            job definition (JSON)
//	catalog/version                       put by every Txn that changes a dataset or a
//	                                      job: its ModRevision is the catalog version;
//	                                      operations track it with their reads, so a
//	                                      catalog change makes a racing commit retry
//	producers/<dataset>                   id of the job producing the dataset; written
//	                                      in the job's Txn, guarded so that a dataset
//	                                      has one producer even under concurrent upserts
//	backfill/<job>                        pending backfill of the job's candidates (JSON,
//	                                      when written); written in the job's Txn, deleted
//	                                      once every READY input chunk has a candidate
//	creds/<job>/<dataset>                 encrypted credential (JSON)
//	rows/<dataset>/<sk>/<role>/<job>      status row; role is INPUT or OUTPUT,
//	                                      job is empty for a published source chunk
//	running/<dataset>/<sk>/<job>          copy of every OUTPUT row in RUNNING: the
//	                                      index of live claims (lease expiry and
//	                                      claim listings never scan history)
//	out/<dataset>/<job>/<sk>              one empty key per OUTPUT row: counted
//	                                      without reading rows (outputs.go)
//	fences/<dataset>/<sk>                 fencing counter of an output chunk; never
//	                                      deleted, incremented by the claim's Txn
//	fencefloor/global                     the fence every chunk without a counter
//	                                      starts above: written by a load from a
//	                                      store with one counter (PostgreSQL), read
//	                                      at open
//	cand/<job>/<0|1>/<sk>/<random>        findNext candidate: 0 for a resubmitted
//	                                      chunk, 1 otherwise, so one range read with
//	                                      a limit yields the next candidate in order
//	evq/<txn>                             events of one committed transaction, in
//	                                      append order, not yet sequenced (JSON list)
//	events/<seq>                          one event (JSON); <seq> is 16 hex digits
//	evc/<dataset>/<sk>/<seq>              index of events by chunk (empty value)
//	txn/<txn>                             commit marker of one transaction, attached
//	                                      to a short lease (it expires a minute or two
//	                                      later); resolves commits whose outcome the
//	                                      client did not see
//	rlocks/<hash>/<id>                    resource lock (JSON); <hash> is the first
//	                                      32 hex digits of SHA-256(resource URI)
//	rlockids/<id>                         <hash> of lock <id>
//	rlockseq                              counter that numbers resource locks
//	changes/<time>/<random>               catalog change (short JSON), written in
//	                                      the Txn of the change; <time> is its time
//	                                      in microseconds, 16 hex digits
//	cnt/at, cnt/c/<dataset>               chunk counts by dataset, job and status:
//	                                      a base and the changes folded since
//	                                      (counts.go), derived, never dumped
//	cntgen                                put by a deleteDataset or a load's end that
//	                                      drops cnt/: no base counted before it is
//	                                      written
//	marks/holds-checked                   since when every server refuses a hold at a
//	                                      dataid the definition does not expect: the
//	                                      first open by a version that does, in
//	                                      microseconds (marks.go)
//	pv/<dataset>/<dimension>/<sk>         a value of a DYNAMIC set (values.go): the
//	                                      time it was added, in microseconds; the
//	                                      dimension is empty for a one-dimensional
//	                                      dataset
//
// # Events
//
// An event's Seq is its commit revision shifted left by 16 bits, plus its
// index within the transaction: unique, and growing with commit order. A
// transaction cannot know its own revision before it commits, so it writes
// its events as one list under evq/<txn>; that key is created once and never
// changed, so its ModRevision is the commit revision and the Seq of each
// event follows from it. A background mover in every Backend then copies the
// events to events/<seq> (and evc/) and deletes the evq/ key; any process may
// do it, the result is the same. Readers read evq/ and events/ at one revision
// and merge them, so an event is never missed or seen twice whether it was
// moved yet or not. WatchEvents replays from f.After that way, then watches
// the evq/ prefix from the next revision: events committed through any server
// of the cluster arrive in Seq order. A subscriber that leaves an event
// unread for a second gives up its etcd watch (etcd's client would buffer
// for it without bound); it is replayed from its last event, a page at a
// time as it reads, and then watches again. Listing the events of one chunk
// (dataset and dataid) reads the evc/ index; other filters read the log in
// Seq order and filter it.
//
// # findNext under contention
//
// Candidates are hints read without tracking the range; the ones a
// transaction takes are tracked like any read, so two transactions that
// take the same candidate cannot both commit. Transactions of one process
// that read a job's queue at once take disjoint candidates, passing over
// those another holds (reservations, batch.go), in queue order.
//
// # Outcomes the client did not see
//
// When a commit fails in a way that leaves its outcome unknown (the leader
// died, the connection broke, the deadline passed), Update resolves it
// before answering: every commit also creates txn/<txn> (its guard requires
// that key to be missing), and the resolution creates the same key with
// another value when it is still missing. Whichever of the two wins tells
// whether the commit happened, and a commit that lost can no longer happen
// later. So a claim, a completion or a cascade is reported exactly as it
// happened, or as UNAVAILABLE when etcd stays unreachable for
// ResolveTimeout.
//
// # Errors
//
// Connection failures, timeouts, leader loss and cancelled contexts are
// backends.Unavailable (callers retry). A transaction larger than the
// cluster's --max-txn-ops fails with a message naming that flag; the
// embedded server raises it.
package etcd
