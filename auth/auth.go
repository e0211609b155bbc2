// Package auth is who a request is: the bearer tokens a server accepts
// (stored hashed in a tokens file), the principal a token stands for, its
// role and the jobs a runner may operate, and the job key a caller presents.
// The GraphQL layer reads the principal and the job key from the request
// context; it never sees a token.
package auth

import (
	"context"
	"slices"
)

// Role is what a principal may do.
type Role string

const (
	// RoleAdmin may do everything.
	RoleAdmin Role = "admin"
	// RoleRunner may run the claim operations (findNext, claim, force,
	// heartbeat, complete, fail, release) of its jobs, take resource locks,
	// and read everything.
	RoleRunner Role = "runner"
	// RoleReader may only query and subscribe.
	RoleReader Role = "reader"
)

func (r Role) valid() bool { return r == RoleAdmin || r == RoleRunner || r == RoleReader }

// Principal is who a request acts as.
type Principal struct {
	// Name is the token's name; it becomes the actor of the events the
	// request causes.
	Name string
	Role Role
	// Jobs are the jobs a runner may operate.
	Jobs []string
}

// Anonymous is the principal of every request to a server running open (no
// tokens configured, loopback address only): an admin named "anonymous".
var Anonymous = Principal{Name: "anonymous", Role: RoleAdmin}

// IsAdmin tells whether p may do everything.
func (p Principal) IsAdmin() bool { return p.Role == RoleAdmin }

// IsRunner tells whether p is a runner (of any job) or an admin.
func (p Principal) IsRunner() bool { return p.Role == RoleAdmin || p.Role == RoleRunner }

// CanOperate tells whether p may run the claim operations of job and see
// its claim tokens and secrets: admins, and runners listing the job.
func (p Principal) CanOperate(job string) bool {
	return p.Role == RoleAdmin || (p.Role == RoleRunner && slices.Contains(p.Jobs, job))
}

type principalKey struct{}
type jobKeyKey struct{}

// WithPrincipal records the authenticated principal in ctx.
func WithPrincipal(ctx context.Context, p Principal) context.Context {
	return context.WithValue(ctx, principalKey{}, p)
}

// PrincipalFrom returns the principal recorded in ctx; ok is false for an
// unauthenticated context, whose zero Principal may do nothing.
func PrincipalFrom(ctx context.Context) (p Principal, ok bool) {
	p, ok = ctx.Value(principalKey{}).(Principal)
	return p, ok
}

// JobKeyHeader is the HTTP header carrying the job key. The key never
// travels in query text or variables.
const JobKeyHeader = "X-Chunklock-Job-Key"

// WithJobKey records the job key the caller presented.
func WithJobKey(ctx context.Context, key string) context.Context {
	return context.WithValue(ctx, jobKeyKey{}, key)
}

// JobKeyFrom returns the job key the caller presented, or "".
func JobKeyFrom(ctx context.Context) string {
	k, _ := ctx.Value(jobKeyKey{}).(string)
	return k
}
