// Package engine is chunklock's engine: every operation of the Store
// (findNext, claim, complete, resubmit, the read models, ...), written once
// over the contract a storage backend implements (backends.Backend and
// backends.Tx, backends/backend.go), so that every backend runs the same
// code and cannot drift from the others. New makes the Store on a backend;
// package backends/open does so for a store URL.
//
// The engine decides with the rules of package backends (rules.go) and
// writes what they return; it asks a transaction at run time only for the
// optional capabilities backend.go lists. Read it by operation:
//
//   - new.go: New and its options; engine.go: the engine's state.
//   - next.go, round.go: findNext and claimNext, one transaction per round
//     of calls of a job; many.go: the batch endings of runner pools
//     (completeMany, failMany, heartbeatMany); claims.go: claim, force and the making of a claim (claimState),
//     and the live-claim operations, served by live.go; answer.go: what a
//     claim's answer carries; rows.go: the rows an operation writes, each
//     with its event.
//   - slots.go: the concurrency limits of jobs and pools (slot records);
//     schedule.go: backoff, schedules and the sweeps of LATEST and ALL
//     readers.
//   - chunkops.go, cascade.go: publish, resubmit and its cascade, hold;
//     rangeops.go, rangetx.go, rangedef.go: the range operations.
//   - mappings.go: what a mapped claim reads (SPEC §9); enqueue.go,
//     mapwindows.go, mapwalk.go: the candidates a chunk becoming READY
//     queues; mapbackfill.go, backfillmark.go: the backfill of a new or
//     changed mapping; mapfit.go: whether a mapping's transactions fit a
//     backend's bounded transactions.
//   - catalogcache.go: the catalog kept in memory and checked against the
//     store's version in each transaction; catalogops.go, jobcheck.go: the
//     catalog operations; lifecycle.go: pausing, resuming and deleting
//     jobs, datasets and pools (SPEC §11, and below); pools.go,
//     recordops.go, resourcelocks.go: pools, records and resource locks.
//   - readmodels.go, graph.go, partitions.go, partitioncount.go: the read
//     models; queue.go: the length of a job's queue.
//   - batcher.go: one batcher serves concurrent calls several per
//     transaction on a backend that allows it; budget.go, lockplan.go: what
//     a batch may hold, and the order in which it locks.
//
// # Catalog lifecycle: how OUTPUT rows are keyed (SPEC §11)
//
// A status row is keyed (dataset, dataid, job, role), and a chunk's status
// is its OUTPUT row under the dataset's producer. Deleting a job must leave
// its output readable, and a job declared later for that dataset must take
// the chunks over without recomputing READY ones; both at millions of rows,
// so neither a delete nor a create may rewrite the dataset's rows.
//
// Decision: rows keep their key, and a dataset records the job id its
// OUTPUT rows are keyed under (Dataset.OutputKey): the id of the producer
// that wrote them, written on the dataset when that producer is deleted,
// and never changed again. Readers (consumers, publish, the read models)
// find the dataset's chunks under it whether or not it has a producer
// (Catalog.OutputJob), and a later producer, of any id, keys its OUTPUT
// rows under it. Deleting and declaring producers is then one catalog
// write, whatever the number of rows: the next deletion finds the same
// id. INPUT rows stay keyed by the reading job's own id, and are removed
// with it. Fences are kept per output chunk (dataset, dataid), whatever
// the job, so tokens never repeat across a delete and a takeover.
//
// # Taking a deleted producer's chunks over under another id
//
// SPEC §11 lets a job of any id declared for the dataset take the chunks
// over (conformance DeleteJobTakeOver: READY chunks not computed again,
// new and resubmitted ones claimed with greater fences, consumers
// unaffected, a delete of the new job while it holds a claim LOCKED, and
// a second takeover after that job is deleted too; the model's redeclare
// draws another id half the time). A job's row key is Catalog.RowJob(job)
// = its output's OutputKey when set, else its id, and everything that
// keys a job's OUTPUT rows uses it:
//
//   - engine: outputKey (rows.go) takes the catalog, at its callers;
//     ClaimState.RowJob keys the row a claim writes; Catalog.OutputJob
//     returns OutputKey before the producer; ValidateJob no longer refuses
//     another id. A RESUBMIT queues the chunk for the row's owner
//     (Catalog.RowOwner: the producer whose RowJob is the row's job).
//   - tokens carry the row key (NewToken(RowJob, ...)); the live
//     operations (live.go, many.go, the reaper) find the job as
//     Catalog.RowOwner of the token's dataset and job, and read its INPUT
//     rows under the job's own id. Claims answers name the owner.
//   - live claims and slots: each backend's DeleteJob looks the RUNNING
//     rows up under the row job (memory's running index, etcd's running/
//     range, PostgreSQL's query with output_key); slot gates count
//     (CountLive) and seed holders (RunningOutputs) under the row jobs,
//     holders naming the job itself.
//   - backfills: memory PutJob and its dump load, etcd's backfill and
//     PostgreSQL's BackfillCandidates find the READY chunks of an input
//     under OutputKey first, then the producer. etcd's producers/<dataset>
//     entry is taken over when it names no stored job producing the
//     dataset.
//   - queues: the takeover queues the RESUBMIT and FAILED chunks it finds
//     under OutputKey, and for a job without inputs over a DYNAMIC output
//     every value of the set whose chunk has no row (deleting the producer
//     dropped the candidates adding them queued).
//
// Left as they are: Event.Job is the row's job, so the events of the new
// job's claims name the row key (the first deleted producer's id), not
// the new job's id, and events(job) of the new job does not list them.
// Naming the claim's job there is not a change of the engine alone: etcd
// keeps its chunk counts per (dataset, Event.Job) from the events it
// appends (etcd/counts.go), so it would count the new job's transitions
// under another key than its rows. chunks(job) and locks(job) filter rows
// by the row's job, so for the new job they list its reads, and its
// outputs only under the row key. The running index of the memory backend
// and CountLive are by job id across datasets: a job later declared under
// the row key's id for another output would count the new producer's
// claims against its own limit.
//
// Weighed against it: keying OUTPUT rows by dataset alone (job "", as a
// source's). It makes a producer change free too and drops a field, but
// every existing store would have to rewrite every OUTPUT row once
// (PostgreSQL: an UPDATE of the primary key of millions of rows; etcd: a
// delete and a put of every rows/ key, in transactions of at most 128
// operations), the key would no longer tell a source's chunk from a
// produced one, and a job's OUTPUT rows could no longer be found by the
// job column the indexes are built on (claims(job), the slot holders'
// rows, schedule frontiers). Recording the key costs one short column.
package engine
