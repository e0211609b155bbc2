package backendtest

import (
	"math/rand/v2"
	"time"

	"github.com/chunklock/chunklock/backends"
)

// The model test's runner-pool operations (SPEC §6): claimNext is, in the
// model, findNext repeated up to max times until it finds nothing; the
// batch endings are the single operations applied to each token in the
// order given.

// drawTokens draws one to four tokens of claims the store issued, mostly
// recent ones, now and then a garbage token or the same token twice.
func (h *harness) drawTokens(r *rand.Rand, o *op) {
	n := 1 + r.IntN(4)
	for range n {
		switch {
		case len(h.tokens) == 0 || r.IntN(12) == 0:
			o.toks = append(o.toks, -1)
		case len(o.toks) > 0 && r.IntN(8) == 0:
			o.toks = append(o.toks, o.toks[0])
		case r.IntN(3) == 0:
			o.toks = append(o.toks, r.IntN(len(h.tokens)))
		default:
			o.toks = append(o.toks, len(h.tokens)-1-r.IntN(min(6, len(h.tokens))))
		}
	}
}

func (h *harness) applyClaimNext(o op) {
	h.t.Helper()
	cs, err := h.b.s.ClaimNext(h.b.ctx, o.job, modelExecutor, o.limit)
	h.code("claimNext", "", err)
	var want []mClaim
	for len(want) < o.limit {
		c := h.m.findNext(o.job)
		if c == nil {
			break
		}
		want = append(want, *c)
	}
	if len(want) != len(cs) {
		got := make([]string, 0, len(cs))
		for _, c := range cs {
			got = append(got, describeC(c))
		}
		wantS := make([]string, 0, len(want))
		for _, c := range want {
			wantS = append(wantS, describeM(&c))
		}
		h.fatalf("claimNext(%s, %d): model claims %v, store claims %v", o.job, o.limit, wantS, got)
	}
	for i := range want {
		h.claimed(want[i], cs[i])
	}
}

func (h *harness) applyMany(o op) {
	h.t.Helper()
	b, m, ctx := h.b, h.m, h.b.ctx
	tokens := make([]string, len(o.toks))
	claims := make([]mClaim, len(o.toks))
	for i, t := range o.toks {
		tokens[i], claims[i] = "ct1.garbage", mClaim{id: -1, job: "ja", dataid: "1"}
		if t >= 0 {
			tokens[i], claims[i] = h.tokens[t].token, h.tokens[t].claim
		}
	}
	var res []backends.TokenResult
	var err error
	switch o.kind {
	case "completeMany":
		res, err = b.s.CompleteMany(ctx, tokens)
	case "failMany":
		items := make([]backends.FailItem, len(tokens))
		for i, t := range tokens {
			items[i] = backends.FailItem{Token: t, Reason: "model failure"}
		}
		res, err = b.s.FailMany(ctx, items)
	case "heartbeatMany":
		res, err = b.s.HeartbeatMany(ctx, tokens)
	}
	h.code(o.kind, "", err)
	if len(res) != len(tokens) {
		h.fatalf("%s: %d results for %d tokens", o.kind, len(res), len(tokens))
	}
	for i, c := range claims {
		h.equal("result token", tokens[i], res[i].Token)
		var want backends.Code
		var lease time.Time
		switch o.kind {
		case "completeMany":
			want = m.end(c, endComplete)
		case "failMany":
			want = m.end(c, endFail)
		case "heartbeatMany":
			lease, want = m.heartbeat(c)
		}
		h.code(o.kind+" result", want, res[i].Err)
		if want == "" && o.kind == "heartbeatMany" {
			h.equal("lease after heartbeat", lease, res[i].LeaseExpiresAt.UTC())
		}
	}
}
