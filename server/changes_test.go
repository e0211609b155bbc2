package server_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/chunklock/chunklock/backends"
)

// TestCatalogChangesOverGraphQL: catalogChanges lists the catalog's changes
// newest first with the token's name as actor, pages through them with
// opaque cursors, filters them, and refuses a bad page size or cursor.
func TestCatalogChangesOverGraphQL(t *testing.T) {
	forEachStore(t, func(t *testing.T, kind storeKind) {
		s := newStack(t, kind.Open(t, backends.NewFakeClock(t0), 1)[0])
		s.define()
		s.ok(admin, `mutation { pauseJob(id: "ja") { paused } }`, nil)
		s.ok(admin, `mutation { resumeJob(id: "ja") { paused } }`, nil)

		const q = `query($after: String) { catalogChanges(job: "ja", first: 1, after: $after) {
			edges { cursor node { cursor time actor kind id op dataset job before } } pageInfo { hasNextPage endCursor } } }`
		type page struct {
			Edges []struct {
				Cursor string
				Node   struct {
					Cursor, Time, Actor, Kind, ID, Op string
					Dataset, Job, Before              *string
				}
			}
			PageInfo struct {
				HasNextPage bool
				EndCursor   *string
			}
		}
		var p1, p2 page
		s.ok(reader, q, nil).field(t, "catalogChanges", &p1)
		require.Len(t, p1.Edges, 1)
		n := p1.Edges[0].Node
		require.Equal(t, []string{"resumeJob", "job", "ja", "admin"}, []string{n.Op, n.Kind, n.ID, n.Actor}, "the newest first, by the token's name")
		require.Equal(t, p1.Edges[0].Cursor, n.Cursor)
		require.NotNil(t, n.Before)
		require.Contains(t, *n.Before, `"paused":true`)
		require.Nil(t, n.Dataset)
		require.True(t, p1.PageInfo.HasNextPage)
		s.ok(reader, q, vars("after", *p1.PageInfo.EndCursor)).field(t, "catalogChanges", &p2)
		require.Equal(t, "pauseJob", p2.Edges[0].Node.Op)

		var none page
		s.ok(reader, `{ catalogChanges(actor: "reader") { edges { node { op } } pageInfo { hasNextPage } } }`, nil).field(t, "catalogChanges", &none)
		require.Empty(t, none.Edges, "the reader changed nothing")
		require.Equal(t, "INVALID_ARGUMENT", s.fails(reader, `{ catalogChanges(first: 1001) { edges { cursor } } }`, nil))
		require.Equal(t, "INVALID_ARGUMENT", s.fails(reader, `{ catalogChanges(after: "bm90IGEgY3Vyc29y") { edges { cursor } } }`, nil))
	})
}
