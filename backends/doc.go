// Package backends is chunklock's vocabulary, rules and contracts: what
// every other package speaks, with no operation of its own. The operations
// are the engine's (package backends/engine), written once over the
// contract a storage backend implements; the storage backends are the
// sub-packages postgres, etcd and memory, and backendtest is the
// conformance suite each of them passes.
//
// Read it top-down:
//
//   - types.go: the entities of the model (datasets, jobs, credentials, status
//     rows, claims, events, resource locks) and the query filters;
//     partitiontypes.go: the partitions read model's.
//   - errors.go: the error codes every layer speaks (NOT_FOUND, LOCKED, ...),
//     and what a range operation that stopped part way reports.
//   - dataid.go: dataid validation and shortlex ordering; token.go: fencing
//     tokens.
//   - catalog.go: the Catalog, a snapshot of datasets and jobs with their
//     producers and consumers; validate.go: what the catalog accepts
//     (datasets, jobs, mappings, pools, ids and text).
//   - rules.go: every rule of the specification's lock tables in one place:
//     which locks a status row implies, when a job may claim a chunk, what
//     each transition writes, when a failed chunk is retried, which key a
//     credential must be encrypted to. Plain functions, no I/O.
//   - store.go: the Store interface the GraphQL layer, the reaper and the
//     runner commands use, with the contract of each method; many.go: the
//     bounds and per-token results of runner pools' batch operations.
//   - backend.go: everything a storage backend provides: Backend and Tx,
//     every method required, and the few optional capabilities the engine
//     asks a transaction for, each with what the engine does without it.
//   - slotrecords.go, slotcodec.go: the slot records of concurrency limits
//     and pools, and their encoding; records.go: the server's own records.
//
// The sub-packages partition and envname hold the arithmetic of partition
// definitions and mappings, and the rule on job env names; open turns a
// store URL into a Store, the engine on the backend the URL names.
package backends
