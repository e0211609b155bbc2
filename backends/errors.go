package backends

import (
	"cmp"
	"errors"
	"fmt"
	"slices"
	"strings"
)

// Code classifies an error for clients. The GraphQL layer publishes it as
// extensions.code; it is the only part of an INTERNAL error a client sees.
type Code string

const (
	CodeNotFound        Code = "NOT_FOUND"
	CodeAlreadyExists   Code = "ALREADY_EXISTS"
	CodeInvalidArgument Code = "INVALID_ARGUMENT"
	CodeLocked          Code = "LOCKED"
	CodeStaleClaim      Code = "STALE_CLAIM"
	CodeUnauthenticated Code = "UNAUTHENTICATED"
	CodeForbidden       Code = "FORBIDDEN"
	CodeUnavailable     Code = "UNAVAILABLE"
	CodeInternal        Code = "INTERNAL"
)

// Error is a domain error whose message is safe to show to a client.
// Anything that is not an *Error (driver errors, I/O errors) is INTERNAL and
// must be scrubbed before it leaves the server.
type Error struct {
	Code    Code
	Message string
	// Blockers lists why a chunk could not be claimed (LOCKED from claim).
	Blockers []Blocker
	// Holders lists the resource locks that refused a lockResource (LOCKED).
	Holders []ResourceLock
	// Range says how far a range operation got before it failed.
	Range *RangeProgress
	// Err is an optional cause; it is not shown to clients.
	Err error
}

func (e *Error) Error() string {
	if e.Err != nil {
		return fmt.Sprintf("%s: %v", e.Message, e.Err)
	}
	return e.Message
}

func (e *Error) Unwrap() error { return e.Err }

// Is makes errors.Is(err, ErrNotFound) and friends match on the code.
func (e *Error) Is(target error) bool {
	t, ok := target.(*Error)
	return ok && t.Message == "" && t.Code == e.Code
}

// Sentinels for errors.Is. They match any *Error of the same code.
var (
	ErrNotFound        = &Error{Code: CodeNotFound}
	ErrAlreadyExists   = &Error{Code: CodeAlreadyExists}
	ErrInvalidArgument = &Error{Code: CodeInvalidArgument}
	ErrLocked          = &Error{Code: CodeLocked}
	ErrStaleClaim      = &Error{Code: CodeStaleClaim}
	ErrForbidden       = &Error{Code: CodeForbidden}
	ErrUnavailable     = &Error{Code: CodeUnavailable}
)

func newError(code Code, format string, args ...any) *Error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...)}
}

// NotFound reports a missing dataset, job, chunk or lock.
func NotFound(format string, args ...any) error { return newError(CodeNotFound, format, args...) }

// AlreadyExists reports a conflicting definition.
func AlreadyExists(format string, args ...any) error {
	return newError(CodeAlreadyExists, format, args...)
}

// InvalidArgument reports bad input: a malformed id, dataid, mode or value.
func InvalidArgument(format string, args ...any) error {
	return newError(CodeInvalidArgument, format, args...)
}

// StaleClaim reports a token that no longer names a live claim.
func StaleClaim(format string, args ...any) error {
	return newError(CodeStaleClaim, format, args...)
}

// Forbidden reports a caller that may not do what it asked.
func Forbidden(format string, args ...any) error { return newError(CodeForbidden, format, args...) }

// Unavailable wraps a failure to reach the store or the key service: the
// caller may retry. The cause is kept for logs, never shown to clients.
func Unavailable(cause error, format string, args ...any) error {
	e := newError(CodeUnavailable, format, args...)
	e.Err = cause
	return e
}

// Locked reports a chunk that cannot be claimed now, with what blocks it.
func Locked(blockers []Blocker, format string, args ...any) error {
	e := newError(CodeLocked, format, args...)
	e.Blockers = blockers
	return e
}

// LiveClaims is the LOCKED error of a job deletion refused while the job
// has live claims: blockers are their OUTPUT rows, sorted here.
func LiveClaims(job string, paused bool, blockers []Blocker) error {
	slices.SortFunc(blockers, func(a, b Blocker) int {
		return cmp.Or(cmp.Compare(a.Dataset, b.Dataset), CompareDataID(a.DataID, b.DataID))
	})
	const few = 10
	chunks := make([]string, 0, few)
	for _, b := range blockers[:min(few, len(blockers))] {
		chunks = append(chunks, b.Dataset+"/"+b.DataID)
	}
	list := strings.Join(chunks, ", ")
	if len(blockers) > few {
		list += fmt.Sprintf(" and %d more", len(blockers)-few)
	}
	if paused {
		return Locked(blockers, "job %q has %d live claim(s), on %s: it is paused and claims no more; delete it again once they end (or release them)", job, len(blockers), list)
	}
	return Locked(blockers, "job %q has %d live claim(s), on %s: pause it so that it claims no more, and delete it again once they end (or release them)", job, len(blockers), list)
}

// CodeOf returns the code of err: the code of the first *Error in its chain,
// or INTERNAL for anything else (including nil-safe handling of wrapped
// driver errors).
func CodeOf(err error) Code {
	if err == nil {
		return ""
	}
	var e *Error
	if errors.As(err, &e) {
		return e.Code
	}
	return CodeInternal
}

// LockedResource reports a resource lock refused because of holders.
func LockedResource(holders []ResourceLock, resource string) error {
	e := newError(CodeLocked, "resource %q is locked by %d other lock(s)", resource, len(holders))
	e.Holders = holders
	return e
}

// MaxRangeDataIDs bounds how many dataids one range operation covers.
const MaxRangeDataIDs = 10000

// RangeSkip is a chunk a range operation left as it was, and why: Code is
// the error the single-chunk operation would have answered (LOCKED,
// NOT_FOUND), Reason its message.
type RangeSkip struct {
	DataID string
	Code   Code
	Reason string
}

// RangeResult is what a range operation did: Changed chunks were written,
// Unchanged ones were already as asked, Skipped ones were refused, in
// dataid order.
type RangeResult struct {
	Changed   int
	Unchanged int
	Skipped   []RangeSkip
}

// RangeProgress is how far a range operation got before it failed: the
// first Done of its Total dataids (the last of them LastDataID, "" when
// none) were served, with the result so far.
type RangeProgress struct {
	RangeResult
	Done, Total int
	LastDataID  string
}

// DescribeBlockers lists blockers for a LOCKED message: kind, chunk and
// status of each.
func DescribeBlockers(bs []Blocker) string {
	parts := make([]string, 0, len(bs))
	for _, b := range bs {
		st := string(b.Status)
		if st == "" {
			st = "no row"
		}
		parts = append(parts, string(b.Kind)+" "+b.Dataset+"/"+b.DataID+" ("+st+")")
	}
	return strings.Join(parts, ", ")
}
