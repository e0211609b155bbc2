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
// that wrote them, written on the dataset when that producer is deleted.
// Readers (consumers, publish, the read models) find the dataset's chunks
// under it whether or not it has a producer (Catalog.OutputJob), and a
// later producer keys its OUTPUT rows under it. Today that producer must
// be declared under the recorded id (ValidateJob refuses another): the
// engine keys a job's OUTPUT rows, tokens, live counts and slot holders by
// the job's own id, and keying them by the recorded id instead is the
// next step. Deleting and declaring producers is then one catalog write,
// whatever the number of rows, and the record never changes again: the
// next deletion finds the same id. INPUT rows stay keyed by the reading
// job's own id, and are removed with it. Fences are kept per output chunk
// (dataset, dataid), whatever the job, so tokens never repeat across a
// delete and a re-creation.
//
// # Taking a deleted producer's chunks over under another id (not built)
//
// SPEC §11 lets a job of any id declared for the dataset take the chunks
// over; today ValidateJob refuses an id other than Dataset.OutputKey
// (INVALID_ARGUMENT naming it, conformance DeleteJobTakeOver). The design
// that keeps the decision above (no row rewritten, one catalog write):
// a job's row key becomes Catalog.RowJob(job) = the output's OutputKey when
// set, else the job's id, and everything that keys a job's OUTPUT rows by
// the job's id uses it instead. Where that is, as read for this note:
//
//   - engine: outputKey (rows.go) takes the catalog, at its 11 callers
//     (claims, enqueue, cascade, graph, mapbackfill, mapfit, mapwindows,
//     schedule); Catalog.OutputJob returns OutputKey before the producer;
//     ValidateJob drops its refusal.
//   - tokens: NewToken/ParseToken carry the row key (the old id); the live
//     operations (live.go job, many.go) find the job as the producer of the
//     token's dataset whose RowJob is the token's job, not by the token's
//     job id, or every claim of the new job is STALE_CLAIM.
//   - live claims and slots: memory's running index and slot holders, etcd's
//     running/ range and PostgreSQL's DeleteJob query look RUNNING rows up by
//     job id: deleteJob, maxConcurrent and pools must look them up by RowJob,
//     or a delete of the new job passes its live claims (guarantee broken).
//   - backfills: memory PutJob and its dump load, etcd's backfill and
//     PostgreSQL's BackfillCandidates find the READY chunks of an input
//     under its producer first (coalesce(producer, output_key)): OutputKey
//     must come first.
//   - events and counts: Event.Job is the row's job; an event of the new
//     job's claim must name the new job (the actor's job), not the key,
//     so that events(job) and the audit trail stay right; chunk counts are
//     kept per (dataset, row job) and read through OutputJob already.
//   - conformance: DeleteJobTakeOver turns from the refusal to the takeover
//     (READY not recomputed, new and resubmitted chunks claimed with greater
//     fences, consumers unaffected), with a delete of the new job while it
//     holds a claim (LOCKED), on every backend; the model's redeclare op
//     draws another id for the job declared again.
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
