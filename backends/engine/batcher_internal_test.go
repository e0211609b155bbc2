package engine

import (
	"context"
	"testing"

	"github.com/chunklock/chunklock/backends"
	"github.com/stretchr/testify/require"
)

// TestPendingCallOfAGoneCallerIsDropped: a call that a batch left pending
// (its candidates were stale) queues again only while its caller waits;
// one whose caller gave up is answered and never served later, so nothing
// is claimed for nobody.
func TestPendingCallOfAGoneCallerIsDropped(t *testing.T) {
	b := &batcher[*nextOp]{queues: map[string]*opQueue[*nextOp]{"j": {leading: true}}}
	gone, cancel := context.WithCancel(context.Background())
	cancel()
	waiting := &nextOp{call: call{ctx: context.Background(), pending: true, done: make(chan struct{})}, job: "j"}
	left := &nextOp{call: call{ctx: gone, pending: true, done: make(chan struct{})}, job: "j"}
	b.answer("j", []*nextOp{waiting, left}, nil)

	require.True(t, isClosed(left.done), "the gone caller's call is answered")
	require.Equal(t, backends.CodeUnavailable, backends.CodeOf(left.err))
	require.Contains(t, left.err.Error(), "nothing changed")
	require.False(t, isClosed(waiting.done), "the waiting caller's call is still to be served")
	require.Equal(t, []*nextOp{waiting}, b.queues["j"].ops, "only the waiting call queues again")
}
