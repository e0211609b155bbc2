//go:build linux

package e2e

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/chunklock/chunklock/backends"
)

// TestServersSideBySide: two `chunklock serve` processes on the embedded
// store, given no store address, run at once, each with its own data; both
// stop cleanly on SIGTERM and remove their socket and URL file.
func TestServersSideBySide(t *testing.T) {
	servers := []*server{startServer(t), startServer(t)}
	for i, s := range servers {
		require.Contains(t, s.proc.stderr.String(), "(etcd clients on unix://"+filepath.Join(s.dataDir, "etcd.sock")+", peers on http://127.0.0.1:")
		resp, err := http.Get(s.url + "/readyz")
		require.NoError(t, err)
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		require.Equal(t, "ready\n", string(body))
		require.NoError(t, s.api.UpsertDataset(t.Context(), backends.Dataset{ID: fmt.Sprintf("only-on-%d", i)}))
	}
	for i, s := range servers {
		ds, err := s.api.Datasets(t.Context())
		require.NoError(t, err)
		require.Len(t, ds, 1)
		require.Equal(t, fmt.Sprintf("only-on-%d", i), ds[0].ID, "each server has its own store")
	}
	for _, s := range servers {
		require.Equal(t, 0, s.stop(t), "stderr:\n%s", s.proc.stderr)
		for _, name := range []string{"etcd.sock", "serve.url"} {
			_, err := os.Stat(filepath.Join(s.dataDir, name))
			require.True(t, errors.Is(err, os.ErrNotExist), "%s is left after a clean stop: %v", name, err)
		}
	}
}
