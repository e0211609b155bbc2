package etcd

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/chunklock/chunklock/backends"
)

// Error mapping: what etcd and gRPC say, as backends errors.

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
		return backends.Unavailable(err, "%s", NoSpaceMessage)
	}
	switch codeOf(err) {
	case codes.Unavailable, codes.DeadlineExceeded, codes.Canceled, codes.Aborted, codes.ResourceExhausted:
		return unavailable(err, "etcd is unavailable (%s); retry", what)
	case codes.Unauthenticated, codes.PermissionDenied:
		return fmt.Errorf("etcd refused access (%s): check the user, password and its role's permissions on the key prefix: %w", what, err)
	}
	return fmt.Errorf("etcd %s: %w", what, err)
}

// NoSpaceMessage is the answer to every write while etcd is out of space
// (its NOSPACE alarm): UNAVAILABLE, since the same write succeeds once an
// operator made room, and a runner retrying meanwhile loses nothing.
const NoSpaceMessage = "the store is out of space (etcd NOSPACE) and refuses every write until an operator makes room; reads still answer. " +
	"Embedded store: restart chunklock serve with a larger --etcd-quota-backend-bytes (the server needs about 6.5 KB of memory a chunk), " +
	"or move the store to PostgreSQL with chunklock store copy (README: Outgrowing the embedded store). " +
	"etcd cluster: defragment it or raise its --quota-backend-bytes, then etcdctl alarm disarm"

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
