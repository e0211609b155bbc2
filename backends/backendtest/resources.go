package backendtest

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/chunklock/chunklock/backends"
	"github.com/stretchr/testify/require"
)

// resourceLockTests cover the named READ/WRITE resource locks (SPEC §3
// lockResource / unlockResource, seeds/004).
var resourceLockTests = []testCase{
	{"ResourceLockModes", (*suite).testResourceLockModes},
	{"ResourceLockExpiry", (*suite).testResourceLockExpiry},
	{"ResourceUnlock", (*suite).testResourceUnlock},
	{"ResourceLockValidation", (*suite).testResourceLockValidation},
}

func (b *bundle) lockResource(client, resource string, mode backends.LockMode, ttl time.Duration) backends.ResourceLock {
	b.t.Helper()
	l, err := b.s.LockResource(b.ctx, client, resource, mode, ttl)
	require.NoError(b.t, err, "%s %s lock on %s", client, mode, resource)
	require.NotEmpty(b.t, l.ID)
	require.Equal(b.t, client, l.Client)
	require.Equal(b.t, resource, l.Resource)
	require.Equal(b.t, mode, l.Mode)
	return l
}

// requireHolders checks a LOCKED refusal and the holders it lists.
func requireHolders(t *testing.T, err error, holders ...backends.ResourceLock) {
	t.Helper()
	requireCode(t, err, backends.CodeLocked)
	var e *backends.Error
	require.True(t, errors.As(err, &e))
	var got, want []string
	for _, h := range e.Holders {
		got = append(got, h.ID+" "+h.Client+" "+string(h.Mode))
	}
	for _, h := range holders {
		want = append(want, h.ID+" "+h.Client+" "+string(h.Mode))
	}
	require.ElementsMatch(t, want, got)
}

func (s *suite) testResourceLockModes(t *testing.T) {
	b := s.setup(t)
	const db = "postgres://warehouse/sales"
	r1 := b.lockResource("loader-1", db, backends.LockRead, 0)
	require.Equal(t, epoch, r1.CreatedAt.UTC())
	require.Equal(t, epoch.Add(backends.DefaultResourceLockTTL), r1.ExpiresAt.UTC(), "the default TTL is one hour")
	r2 := b.lockResource("loader-2", db, backends.LockRead, time.Minute)
	require.NotEqual(t, r1.ID, r2.ID)
	require.Equal(t, epoch.Add(time.Minute), r2.ExpiresAt.UTC())
	r3 := b.lockResource("loader-1", db, backends.LockRead, 0) // READ locks are not exclusive, not even per client

	_, err := b.s.LockResource(b.ctx, "writer", db, backends.LockWrite, 0)
	requireHolders(t, err, r1, r2, r3)

	// WRITE on a free resource, then nothing else.
	const file = "s3://lake/sales/"
	w := b.lockResource("writer", file, backends.LockWrite, 0)
	_, err = b.s.LockResource(b.ctx, "reader", file, backends.LockRead, 0)
	requireHolders(t, err, w)
	_, err = b.s.LockResource(b.ctx, "other", file, backends.LockWrite, 0)
	requireHolders(t, err, w)
	_, err = b.s.LockResource(b.ctx, "writer", file, backends.LockWrite, 0)
	requireHolders(t, err, w) // not reentrant
	_, err = b.s.LockResource(b.ctx, "writer", file, backends.LockRead, 0)
	requireHolders(t, err, w)

	// Resources are independent.
	b.lockResource("writer", "s3://lake/sales/x", backends.LockWrite, 0)

	all, err := b.s.ResourceLocks(b.ctx, backends.ResourceLockFilter{})
	require.NoError(t, err)
	require.Len(t, all, 5)
	list := func(f backends.ResourceLockFilter) []string {
		t.Helper()
		ls, err := b.s.ResourceLocks(b.ctx, f)
		require.NoError(t, err)
		var ids []string
		for _, l := range ls {
			ids = append(ids, l.ID)
		}
		return ids
	}
	require.ElementsMatch(t, []string{r1.ID, r2.ID, r3.ID}, list(backends.ResourceLockFilter{Resource: db}))
	require.ElementsMatch(t, []string{r1.ID, r3.ID}, list(backends.ResourceLockFilter{Client: "loader-1"}))
	require.ElementsMatch(t, []string{r2.ID}, list(backends.ResourceLockFilter{Resource: db, Client: "loader-2", Mode: backends.LockRead}))
	require.Len(t, list(backends.ResourceLockFilter{Mode: backends.LockWrite}), 2)
	require.Empty(t, list(backends.ResourceLockFilter{Resource: "nothing://here"}))

	// Unlocking the READ locks frees the resource for a writer.
	for _, l := range []backends.ResourceLock{r1, r2, r3} {
		require.NoError(t, b.s.UnlockResource(b.ctx, l.ID, l.Client))
	}
	b.lockResource("writer", db, backends.LockWrite, 0)
}

func (s *suite) testResourceLockExpiry(t *testing.T) {
	b := s.setup(t)
	const res = "postgres://warehouse/sales"
	w := b.lockResource("writer", res, backends.LockWrite, 10*time.Second)
	b.clock.Advance(9 * time.Second)
	_, err := b.s.LockResource(b.ctx, "reader", res, backends.LockRead, 0)
	requireHolders(t, err, w)
	b.clock.Advance(time.Second)
	ls, err := b.s.ResourceLocks(b.ctx, backends.ResourceLockFilter{})
	require.NoError(t, err)
	require.Empty(t, ls, "an expired lock is not listed")
	r := b.lockResource("reader", res, backends.LockRead, 10*time.Second)
	requireCode(t, b.s.UnlockResource(b.ctx, w.ID, "writer"), backends.CodeNotFound, "unlocking an expired lock")

	b.clock.Advance(time.Hour)
	b.lockResource("writer", res, backends.LockWrite, 0)
	requireCode(t, b.s.UnlockResource(b.ctx, r.ID, "reader"), backends.CodeNotFound)
}

func (s *suite) testResourceUnlock(t *testing.T) {
	b := s.setup(t)
	const res = "s3://lake/x/"
	w := b.lockResource("writer", res, backends.LockWrite, 0)
	requireCode(t, b.s.UnlockResource(b.ctx, w.ID, "intruder"), backends.CodeForbidden, "only the holder unlocks")
	_, err := b.s.LockResource(b.ctx, "intruder", res, backends.LockWrite, 0)
	requireHolders(t, err, w)
	requireCode(t, b.s.UnlockResource(b.ctx, "no-such-lock", "writer"), backends.CodeNotFound)
	require.NoError(t, b.s.UnlockResource(b.ctx, w.ID, "writer"))
	requireCode(t, b.s.UnlockResource(b.ctx, w.ID, "writer"), backends.CodeNotFound, "unlocking twice")
	ls, err := b.s.ResourceLocks(b.ctx, backends.ResourceLockFilter{})
	require.NoError(t, err)
	require.Empty(t, ls)
	b.lockResource("intruder", res, backends.LockWrite, 0)
}

func (s *suite) testResourceLockValidation(t *testing.T) {
	b := s.setup(t)
	for _, c := range []struct {
		client, resource string
		mode             backends.LockMode
	}{
		{"", "s3://x", backends.LockRead},
		{strings.Repeat("c", 257), "s3://x", backends.LockRead},
		{"c", "", backends.LockRead},
		{"c", "s3://" + strings.Repeat("x", 2048), backends.LockRead},
		{"c", "s3://x", "read"},
		{"c", "s3://x", "EXCLUSIVE"},
		{"c", "s3://x", ""},
	} {
		_, err := b.s.LockResource(b.ctx, c.client, c.resource, c.mode, 0)
		requireCode(t, err, backends.CodeInvalidArgument, "%+v", c)
	}
	requireCode(t, b.s.UnlockResource(b.ctx, "", "c"), backends.CodeInvalidArgument)
	ls, err := b.s.ResourceLocks(b.ctx, backends.ResourceLockFilter{})
	require.NoError(t, err)
	require.Empty(t, ls)
}
