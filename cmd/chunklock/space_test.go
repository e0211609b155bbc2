package main

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"github.com/chunklock/chunklock/backends/etcd/embedded"
)

// fillEmbedded writes 1 MiB values into the embedded store of a running
// serve (through its socket in dir) until it runs out of space.
func fillEmbedded(t *testing.T, dir string) {
	t.Helper()
	cli, err := clientv3.New(clientv3.Config{Endpoints: []string{"unix://" + filepath.Join(dir, embedded.SocketName)}, Logger: zap.NewNop()})
	require.NoError(t, err)
	defer cli.Close()
	v := strings.Repeat("x", 1<<20)
	for i := 0; i < 1000; i++ {
		if _, err := cli.Put(context.Background(), fmt.Sprintf("/filler/%04d", i), v); err != nil {
			require.ErrorContains(t, err, "space exceeded")
			return
		}
	}
	t.Fatal("the store never ran out of space")
}

// TestServeQuota: serve's --etcd-quota-backend-bytes sets the embedded
// store's quota. Past it, a write answers UNAVAILABLE naming that flag,
// /readyz stays ready with a warning, /metrics has the gauges, and a
// restart with the same quota warns in the log; a restart with a larger
// one accepts writes.
func TestServeQuota(t *testing.T) {
	dir := t.TempDir()
	url, _, stop := startServe(t, "--listen", "127.0.0.1:0", "--data-dir", dir, "--etcd-quota-backend-bytes", "40MiB")
	res := postGraphQL(t, url, "", `mutation { upsertDataset(input: {id: "src"}) { id } }`)
	require.Nil(t, res["errors"], "%v", res)
	require.Equal(t, "ready\n", getBody(t, url+"/readyz"), "far from the quota: no warning")
	metrics := getBody(t, url+"/metrics")
	require.Contains(t, metrics, "chunklock_store_quota_bytes 4.194304e+07")
	require.Contains(t, metrics, "chunklock_store_nospace 0")

	fillEmbedded(t, dir)
	res = postGraphQL(t, url, "", `mutation { publish(dataset: "src", dataid: "1") { status } }`)
	errs, _ := res["errors"].([]any)
	require.Len(t, errs, 1, "%v", res)
	e := errs[0].(map[string]any)
	require.Equal(t, "UNAVAILABLE", e["extensions"].(map[string]any)["code"], "%v", e)
	require.Contains(t, e["message"], "--etcd-quota-backend-bytes")
	ready := getBody(t, url+"/readyz")
	require.True(t, strings.HasPrefix(ready, "ready\nwarning: the embedded store is out of space (NOSPACE"), ready)
	require.Contains(t, getBody(t, url+"/metrics"), "chunklock_store_nospace 1")
	require.Equal(t, 0, stop())

	url, stderr, stop := startServe(t, "--listen", "127.0.0.1:0", "--data-dir", dir, "--etcd-quota-backend-bytes", "40MiB")
	require.Regexp(t, `level=WARN msg="the embedded store (is out of space|uses \d+% of its quota).*--etcd-quota-backend-bytes`, stderr.String(), "the start warns of a store near or at its quota")
	require.Equal(t, 0, stop())

	url, _, stop = startServe(t, "--listen", "127.0.0.1:0", "--data-dir", dir, "--etcd-quota-backend-bytes", "1GiB")
	res = postGraphQL(t, url, "", `mutation { publish(dataset: "src", dataid: "1") { status } }`)
	require.Nil(t, res["errors"], "%v", res)
	require.Equal(t, "ready\n", getBody(t, url+"/readyz"))
	require.Equal(t, 0, stop())
}

func TestParseBytes(t *testing.T) {
	for in, want := range map[string]int64{"8GiB": 8 << 30, "1048576": 1 << 20, "64 MiB": 64 << 20, "2TiB": 2 << 40, "1024KiB": 1 << 20, "3000000B": 3000000} {
		n, err := parseBytes(in)
		require.NoError(t, err, in)
		require.Equal(t, want, n, in)
	}
	for _, in := range []string{"", "8GB", "-1", "1.5GiB", "10", "GiB", "99999999999TiB"} {
		_, err := parseBytes(in)
		require.Error(t, err, in)
	}
}
