// Package backends is chunklock's domain layer and storage boundary.
//
// Read it top-down:
//
//   - types.go: the entities of the model (datasets, jobs, credentials, status
//     rows, claims, events, resource locks) and the query filters.
//   - rules.go: every rule of the specification's lock tables in one place:
//     which locks a status row implies, when a job may claim a chunk, and
//     what each transition writes. Plain functions, no I/O.
//   - dataid.go: dataid validation and shortlex ordering.
//   - mappings.go, cascade.go: partition mappings (SPEC §9): which input
//     chunks a claim reads (IdentityReads for a job without mappings, the
//     fast path), the locks a mapped claim takes across dataids, and the
//     invalidation that follows every read of a chunk. The INPUT row of a
//     mapped read is keyed by the output dataid it is read for too
//     (RowKey.ReadFor, which says why). mapwindows.go and mapwalk.go: the
//     candidates an input chunk becoming READY queues through a
//     TIME_WINDOW (the reverse mapping), worked out as intervals;
//     mapbackfill.go: the backfill of a new or changed mapping; mapfit.go:
//     whether a mapping's transactions fit a backend with a bounded
//     number of keys per transaction.
//   - errors.go: the error codes every layer speaks (NOT_FOUND, LOCKED, ...).
//   - engine.go: the operations (findNext, claim, complete, resubmit, ...)
//     written once against the small Tx interface, so that every backend
//     runs the same code and cannot drift from the others.
//   - store.go: the Store interface the GraphQL layer and the runner
//     commands use, with the contract of each method.
//
// Implementations live in sub-packages (postgres, etcd, memory); the shared
// conformance suite that each of them passes is backendtest.
package backends
