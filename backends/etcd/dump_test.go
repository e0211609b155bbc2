package etcd

import (
	"context"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/chunklock/chunklock/backends"
	"github.com/chunklock/chunklock/backends/backendtest"
	"github.com/chunklock/chunklock/backends/engine"
	"github.com/chunklock/chunklock/backends/memory"
)

func memoryFactory(*testing.T) backends.Backend { return memory.New() }

// TestCopy: memory -> etcd -> memory, and etcd -> etcd -> etcd.
func TestCopy(t *testing.T) {
	t.Run("memory", func(t *testing.T) { backendtest.RunCopy(t, memoryFactory, factory) })
	t.Run("etcd", func(t *testing.T) { backendtest.RunCopy(t, factory, factory) })
}

// keyPrefixRE finds the first segment of every key the package writes
// (b.key("rows", ...)).
var keyPrefixRE = regexp.MustCompile(`\.key\("([a-z_]+)"`)

// TestDumpCoversEveryPrefix fails while the package writes a key prefix
// that DumpCovers does not name: a store copy would leave it behind. When
// it fails, add the prefix to a dump kind (dump.go, load.go) or, for keys
// rebuilt from others or of no use in a copy, name it with kind "".
func TestDumpCoversEveryPrefix(t *testing.T) {
	covers := (&Backend{}).DumpCovers()
	files, err := filepath.Glob("*.go")
	require.NoError(t, err)
	found := map[string]bool{}
	for _, f := range files {
		if filepath.Ext(f) != ".go" || regexp.MustCompile(`_test\.go$`).MatchString(f) {
			continue
		}
		src, err := os.ReadFile(f)
		require.NoError(t, err)
		for _, m := range keyPrefixRE.FindAllStringSubmatch(string(src), -1) {
			found[m[1]] = true
		}
	}
	var missing []string
	for p := range found {
		if _, ok := covers[p]; !ok {
			missing = append(missing, p)
		}
	}
	sort.Strings(missing)
	require.Empty(t, missing, "key prefixes no dump kind covers (DumpCovers, dump.go)")
	require.Contains(t, found, "rows", "the scan found the package's keys")

	// And stores that ran the copy's workload hold no other prefix.
	var cfgs []Config
	opened := func(t *testing.T) backends.Backend {
		cfg := freshConfig()
		cfgs = append(cfgs, cfg)
		b, err := OpenClient(t.Context(), testClient, cfg)
		require.NoError(t, err)
		return b
	}
	backendtest.RunCopy(t, opened, opened)
	for _, cfg := range cfgs {
		be, err := OpenClient(t.Context(), testClient, cfg)
		require.NoError(t, err)
		held, err := be.keyPrefixes(t.Context())
		require.NoError(t, err)
		require.NoError(t, be.Close())
		require.Contains(t, held, "rows")
		for p := range held {
			require.Contains(t, covers, p, "the store holds keys under %s/, which no dump kind covers", p)
		}
	}
}

// TestDumpSkipsPurgedReads: the INPUT rows of a deleted job whose purge was
// interrupted (purge/<job> still there) are not dumped; its OUTPUT rows and
// other rows are.
func TestDumpSkipsPurgedReads(t *testing.T) {
	ctx := context.Background()
	b := factory(t).(*Backend)
	s := engine.New(b)
	t.Cleanup(func() { _ = s.Close() })
	for _, id := range []string{"src", "out"} {
		_, err := s.UpsertDataset(ctx, backends.Dataset{ID: id, Location: "/" + id + "/{dataid}"})
		require.NoError(t, err)
	}
	_, err := s.UpsertJob(ctx, backends.Job{ID: "j", Inputs: []string{"src"}, Output: "out"})
	require.NoError(t, err)
	_, err = s.Publish(ctx, "src", "1")
	require.NoError(t, err)
	c, err := s.FindNext(ctx, "j", "e")
	require.NoError(t, err)
	require.NoError(t, s.Complete(ctx, c.Token))
	roles := func() map[backends.Role]int {
		out := map[backends.Role]int{}
		require.NoError(t, b.Dump(ctx, backends.DumpRows, func(it backends.DumpItem) error {
			out[it.Row.Role]++
			return nil
		}))
		return out
	}
	require.Equal(t, map[backends.Role]int{backends.RoleOutput: 2, backends.RoleInput: 1}, roles())
	_, err = b.cli.Put(ctx, b.purgeKey("j"), `["src"]`) // as an interrupted purge leaves it
	require.NoError(t, err)
	require.Equal(t, map[backends.Role]int{backends.RoleOutput: 2}, roles())
}

// TestFenceFloor: a global fence loaded from a store numbering every chunk
// from one counter (PostgreSQL) is the floor of every chunk without a
// counter of its own, in the process that loaded it and in one opened
// after, and a dump hands it on.
func TestFenceFloor(t *testing.T) {
	ctx := t.Context()
	cfg := freshConfig()
	b, err := OpenClient(ctx, testClient, cfg)
	require.NoError(t, err)
	t.Cleanup(func() { _ = b.Close() })
	require.NoError(t, b.Load(ctx, backends.DumpFences, []backends.DumpItem{{Fence: &backends.Fence{Fence: 40, Global: true}}}))
	require.NoError(t, b.FinishLoad(ctx))
	claim := func(be backends.Backend, dataid string) int64 {
		s := engine.New(be)
		_, err := s.UpsertDataset(ctx, backends.Dataset{ID: "out", Location: "/out/{dataid}"})
		require.NoError(t, err)
		_, err = s.UpsertJob(ctx, backends.Job{ID: "make", Output: "out"})
		require.NoError(t, err)
		c, err := s.Claim(ctx, "make", dataid, "x")
		require.NoError(t, err)
		return c.Fence
	}
	require.Greater(t, claim(b, "1"), int64(40), "a chunk no row named starts above the floor")
	again, err := OpenClient(ctx, testClient, cfg)
	require.NoError(t, err)
	t.Cleanup(func() { _ = again.Close() })
	require.Greater(t, claim(again, "2"), int64(40), "a process opened after the load reads the floor")
	var global []int64
	require.NoError(t, b.Dump(ctx, backends.DumpFences, func(it backends.DumpItem) error {
		if it.Fence.Global {
			global = append(global, it.Fence.Fence)
		}
		return nil
	}))
	require.Equal(t, []int64{40}, global, "the dump hands the floor on")
}
