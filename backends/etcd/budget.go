package etcd

import (
	"encoding/json"

	"github.com/chunklock/chunklock/backends"
)

// What a transaction may send (backends.Limits.MaxTxnBytes): etcd refuses a
// request larger than its --max-request-bytes ("request is too large"), and
// the client one larger than its send limit. A claim of a job with mappings
// sends a guard, a write and an event for every chunk it reads, so the engine
// refuses, when the job is stored, one whose claims would not fit.

// clientSendDefault is the etcd client's own default send limit.
const clientSendDefault = 2 << 20

// sendSlack is what a request carries besides its operations (headers,
// framing), kept free under the limits.
const sendSlack = 16 << 10

// sendLimit is the send limit of a client this package makes for cfg: the
// client's default, or more when the cluster takes more.
func sendLimit(cfg Config) int {
	return max(clientSendDefault, cfg.MaxRequestBytes+sendSlack)
}

// maxTxnBytes is the most one transaction may send: the cluster's
// --max-request-bytes, and the send limit of the client (the default one
// for a client this package did not make).
func (b *Backend) maxTxnBytes() int {
	limit := clientSendDefault
	if b.ownCli {
		limit = sendLimit(b.cfg)
	}
	return min(b.cfg.MaxRequestBytes, limit) - sendSlack
}

// opOverhead bounds what one operation of a Txn adds besides its key and
// value (its type, the compare's target and value, the protobuf framing).
const opOverhead = 24

// commitBytes is what guarding the rows keyed guards, writing rows and
// cands, and recording events add to a commit of this backend.
func (b *Backend) commitBytes(guards []backends.RowKey, rows []backends.StatusRow, cands []backends.Candidate, events []backends.Event) int {
	n := 0
	for _, k := range guards {
		n += len(b.rowKey(k)) + opOverhead
	}
	for _, r := range rows {
		n += len(b.rowKey(r.RowKey)) + len(encodeRow(r)) + opOverhead
	}
	for _, c := range cands {
		n += len(b.candKey(c)) + len(encodeCand(c)) + opOverhead
	}
	for _, e := range events {
		data, _ := json.Marshal(toEventVal(e))
		n += len(data) + 1
	}
	return n
}
