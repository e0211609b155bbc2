package backends

import "time"

// The vocabulary of runner pools (Store.ClaimNext and the batch endings,
// SPEC §6).

const (
	// MaxClaimNext bounds the max of one ClaimNext call.
	MaxClaimNext = 1000
	// MaxManyTokens bounds the list of one CompleteMany, FailMany or
	// HeartbeatMany call.
	MaxManyTokens = 1000
)

// FailItem is one claim FailMany fails, and why.
type FailItem struct {
	Token  string
	Reason string
}

// TokenResult answers one token of CompleteMany, FailMany or
// HeartbeatMany: Err is nil when the operation took effect (or repeated an
// ending that had, SPEC §3), else what the single operation would answer
// (STALE_CLAIM, UNAVAILABLE when
// the store could not be reached: retry). LeaseExpiresAt is a heartbeat's
// new lease.
type TokenResult struct {
	Token          string
	Err            error
	LeaseExpiresAt time.Time
}

// OK tells whether the operation took effect for this token.
func (r TokenResult) OK() bool { return r.Err == nil }

// Code is the code of Err; "" when OK.
func (r TokenResult) Code() Code {
	if r.Err == nil {
		return ""
	}
	return CodeOf(r.Err)
}
