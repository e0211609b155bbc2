package server

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"net/http"
	"runtime/debug"
	"time"

	"github.com/99designs/gqlgen/graphql"
	"github.com/99designs/gqlgen/graphql/errcode"
	"github.com/vektah/gqlparser/v2/gqlerror"

	"github.com/chunklock/chunklock/backends"
)

// errPanic marks a recovered panic; it is answered as INTERNAL.
var errPanic = errors.New("panic while resolving")

// clientErrorCodes are the codes gqlgen and its extensions give errors in
// the request itself (syntax, validation, variable types, limits). Their
// messages describe the request and are safe to return.
var clientErrorCodes = map[string]bool{
	errcode.ParseFailed:      true,
	errcode.ValidationFailed: true,
	complexityLimitCode:      true,
	depthLimitCode:           true,
	queryBoundsCode:          true,
}

// presentError turns any error into what a client may see: the code and
// message of a backends error (with the blockers or holders of LOCKED), an
// INVALID_ARGUMENT for errors in the request itself, UNAVAILABLE for a
// request that ran out of time, and for everything else INTERNAL with a
// generic message and a reference to the server log, where the error is.
// No SQL, stack, key material or ciphertext ever reaches a client.
func (s *Server) presentError(ctx context.Context, err error) *gqlerror.Error {
	ge := graphql.DefaultErrorPresenter(ctx, err)
	out := gqlerror.Error{Message: ge.Message, Path: ge.Path, Locations: ge.Locations}
	if code, ok := ge.Extensions["code"].(string); ok && clientErrorCodes[code] {
		return s.answer(&out, backends.CodeInvalidArgument, ge.Message, nil)
	}
	var de *backends.Error
	switch {
	case errors.As(err, &de):
		msg := de.Message
		switch {
		case de.Code == backends.CodeUnavailable && de.Err != nil:
			s.log.Warn("store or key service unavailable", "err", de.Err, "path", out.Path.String())
		case de.Code == backends.CodeInternal:
			ref := newRef()
			s.log.Error("internal error answered to a client", "ref", ref, "path", out.Path.String(), "err", de.Err)
			msg += " (ref " + ref + ")"
		}
		return s.answer(&out, de.Code, msg, errorDetails(de))
	case errors.Is(err, context.DeadlineExceeded):
		return s.answer(&out, backends.CodeUnavailable, "the request ran out of time ("+s.cfg.RequestTimeout.String()+"); retry, or ask for less at once", nil)
	case errors.Is(err, context.Canceled):
		return s.answer(&out, backends.CodeUnavailable, "the request was cancelled", nil)
	case out.Message == "introspection disabled":
		return s.answer(&out, backends.CodeForbidden, "introspection is turned off on this server (--introspection)", nil)
	}
	ref := newRef()
	s.log.Error("internal error answered to a client", "ref", ref, "path", out.Path.String(), "err", err)
	return s.answer(&out, backends.CodeInternal, "internal error (ref "+ref+"); the server log has the details", nil)
}

// answer sets the client-visible message and extensions of out, dropping
// whatever else the error carried, and counts the error.
func (s *Server) answer(out *gqlerror.Error, code backends.Code, msg string, ext map[string]any) *gqlerror.Error {
	if ext == nil {
		ext = map[string]any{}
	}
	ext["code"] = string(code)
	out.Message, out.Extensions = msg, ext
	s.metrics.errorAnswered(code)
	return out
}

// blockerJSON is one entry of extensions.blockers.
type blockerJSON struct {
	Dataset string     `json:"dataset"`
	DataID  string     `json:"dataid"`
	Job     *string    `json:"job"`
	Kind    string     `json:"kind"`
	Status  string     `json:"status"`
	Until   *time.Time `json:"until,omitempty"`
	Pool    *string    `json:"pool,omitempty"`
}

// holderJSON is one entry of extensions.holders.
type holderJSON struct {
	ID        string    `json:"id"`
	Client    string    `json:"client"`
	Resource  string    `json:"resource"`
	Mode      string    `json:"mode"`
	CreatedAt time.Time `json:"createdAt"`
	ExpiresAt time.Time `json:"expiresAt"`
}

// errorDetails returns the extensions of a domain error besides its code:
// how far a range operation got (rangeDetails), or what refused a LOCKED
// one (lockedDetails).
func errorDetails(e *backends.Error) map[string]any {
	if e.Range != nil {
		return rangeDetails(e.Range)
	}
	if e.Code != backends.CodeLocked {
		return nil
	}
	return lockedDetails(e)
}

// rangeDetails returns how far a failed range operation got:
// extensions.done of extensions.total chunks, the last extensions.lastDataid
// (null when none), of which extensions.changed, unchanged and skipped.
func rangeDetails(p *backends.RangeProgress) map[string]any {
	var last *string
	if p.LastDataID != "" {
		last = &p.LastDataID
	}
	return map[string]any{"done": p.Done, "total": p.Total, "lastDataid": last,
		"changed": p.Changed, "unchanged": p.Unchanged, "skipped": len(p.Skipped)}
}

// lockedDetails returns extensions.blockers (what blocks a chunk) and
// extensions.holders (the resource locks refusing a lock) of a LOCKED error,
// in the shapes and spellings of the GraphQL types Blocker and ResourceLock.
func lockedDetails(e *backends.Error) map[string]any {
	ext := map[string]any{}
	if len(e.Blockers) > 0 {
		bs := make([]blockerJSON, len(e.Blockers))
		for i, b := range e.Blockers {
			bs[i] = blockerJSON{Dataset: b.Dataset, DataID: b.DataID, Kind: string(b.Kind), Status: statusName(b.Status)}
			if b.Job != "" {
				bs[i].Job = &b.Job
			}
			if !b.Until.IsZero() {
				until := b.Until.UTC()
				bs[i].Until = &until
			}
			if b.Pool != "" {
				bs[i].Pool = &b.Pool
			}
		}
		ext["blockers"] = bs
	}
	if len(e.Holders) > 0 {
		hs := make([]holderJSON, len(e.Holders))
		for i, h := range e.Holders {
			hs[i] = holderJSON{ID: h.ID, Client: h.Client, Resource: h.Resource, Mode: string(h.Mode), CreatedAt: h.CreatedAt, ExpiresAt: h.ExpiresAt}
		}
		ext["holders"] = hs
	}
	return ext
}

// statusName spells a status as the GraphQL enum does: NONE for no row.
func statusName(s backends.Status) string {
	if s == backends.StatusNone {
		return "NONE"
	}
	return string(s)
}

// recoverPanic logs a panic in a resolver with its stack; the client gets
// INTERNAL.
func (s *Server) recoverPanic(ctx context.Context, p any) error {
	s.log.Error("panic in GraphQL execution", "panic", p, "path", graphql.GetPath(ctx).String(), "stack", string(debug.Stack()))
	return errPanic
}

func newRef() string {
	var b [6]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// writeError answers a request refused before GraphQL execution (method,
// content type, authentication, body size) in the GraphQL response shape.
func (s *Server) writeError(w http.ResponseWriter, status int, code backends.Code, msg string) {
	s.metrics.errorAnswered(code)
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(map[string]any{
		"errors": []map[string]any{{"message": msg, "extensions": map[string]any{"code": string(code)}}},
	})
}
