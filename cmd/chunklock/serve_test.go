package main

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/chunklock/chunklock/backends/etcd/embedded"
)

// preferListen makes addr the address serve prefers when --listen is not
// given, in place of 127.0.0.1:8080, which the tests leave alone. Tests
// that use it are not parallel.
func preferListen(t *testing.T, addr string) { override(t, &defaultListen, addr) }

// override sets *p to v until the test ends. Tests that use it are not
// parallel.
func override[T any](t *testing.T, p *T, v T) {
	old := *p
	*p = v
	t.Cleanup(func() { *p = old })
}

// freeAddr returns a loopback address nobody listened on a moment ago.
func freeAddr(t *testing.T) string {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer l.Close()
	return l.Addr().String()
}

// holdAddr listens on a free loopback port until the test ends.
func holdAddr(t *testing.T) string {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	t.Cleanup(func() { l.Close() })
	return l.Addr().String()
}

func getBody(t *testing.T, url string) string {
	t.Helper()
	resp, err := http.Get(url)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return string(b)
}

// TestServeSideBySide: two `chunklock serve` with no address settings, in
// two data directories, run at once. The first takes the preferred HTTP
// address, the second a free port and says so; each embedded etcd listens
// on a socket in its own directory. Both answer, each with its own data,
// and both stop cleanly, removing their socket and URL file.
func TestServeSideBySide(t *testing.T) {
	pref := freeAddr(t)
	preferListen(t, pref)
	dirs := []string{t.TempDir(), t.TempDir()}
	type served struct {
		url    string
		stderr *syncBuffer
		stop   func() int
	}
	var servers []served
	for _, dir := range dirs {
		url, stderr, stop := startServe(t, "--data-dir", dir)
		servers = append(servers, served{url, stderr, stop})
	}
	taken := pref + " is taken (another chunklock?), so this server listens on "
	a, b := servers[0], servers[1]
	if a.url == "http://"+pref {
		require.NotContains(t, a.stderr.String(), "is taken", "the first server has the preferred address")
	} else {
		// Another process took the port between freeAddr and serve.
		require.Contains(t, a.stderr.String(), taken)
	}
	require.NotEqual(t, "http://"+pref, b.url)
	require.Contains(t, b.stderr.String(), taken+strings.TrimPrefix(b.url, "http://")+" instead")
	require.NotEqual(t, a.url, b.url)

	for i, s := range servers {
		out := s.stderr.String()
		require.Contains(t, out, "etcd clients on unix://"+filepath.Join(dirs[i], embedded.SocketName)+", peers on http://127.0.0.1:", out)
		require.Contains(t, out, "GraphQL at "+s.url+"/graphql")
		require.Equal(t, "ready\n", getBody(t, s.url+"/readyz"))
		id := fmt.Sprintf("only-on-%d", i)
		res := postGraphQL(t, s.url, "", fmt.Sprintf(`mutation { upsertDataset(input: {id: %q}) { id } }`, id))
		require.Equal(t, map[string]any{"upsertDataset": map[string]any{"id": id}}, res["data"], "%v", res)
		url, err := os.ReadFile(filepath.Join(dirs[i], serveURLName))
		require.NoError(t, err)
		require.Equal(t, s.url+"\n", string(url))
	}
	for i, s := range servers {
		res := postGraphQL(t, s.url, "", `{ datasets { id } }`)
		require.Equal(t, map[string]any{"datasets": []any{map[string]any{"id": fmt.Sprintf("only-on-%d", i)}}}, res["data"], "each server has its own store")
	}
	for i, s := range servers {
		require.Equal(t, 0, s.stop(), s.stderr.String())
		for _, name := range []string{serveURLName, embedded.SocketName} {
			_, err := os.Stat(filepath.Join(dirs[i], name))
			require.True(t, errors.Is(err, os.ErrNotExist), "%s is left after a clean stop: %v", name, err)
		}
	}
}

// TestServeAddressTaken: an address given explicitly (flag or environment)
// that another process holds is an error naming the setting and the
// address.
func TestServeAddressTaken(t *testing.T) {
	held := holdAddr(t)
	serve := func(args ...string) string {
		t.Helper()
		var stderr bytes.Buffer
		code := run(t.Context(), append([]string{"chunklock", "serve", "--data-dir", t.TempDir()}, args...), io.Discard, &stderr)
		require.Equal(t, 1, code, stderr.String())
		return stderr.String()
	}
	out := serve("--listen", "127.0.0.1:0", "--etcd-client-addr", held)
	require.Contains(t, out, "--etcd-client-addr: embedded etcd: client address "+held+" is not available")
	require.Contains(t, out, "address already in use")
	out = serve("--listen", held)
	require.Contains(t, out, "--listen "+held+" is taken")
	out = serve("--listen", "127.0.0.1:0", "--etcd-client-addr", "0.0.0.0:0")
	require.Contains(t, out, "is not a loopback address")
	t.Setenv("CHUNKLOCK_ETCD_PEER_ADDR", held)
	out = serve("--listen", "127.0.0.1:0")
	require.Contains(t, out, "--etcd-peer-addr: embedded etcd: peer address "+held+" is not available")
}

// TestClientFindsMovedServer: a server on the default data directory that
// had to move off the preferred address writes its URL to
// ./chunklock-data/serve.url, and the client commands run there use it;
// --url and CHUNKLOCK_URL still win, and a file others may write is
// refused.
func TestClientFindsMovedServer(t *testing.T) {
	t.Chdir(t.TempDir())
	preferListen(t, holdAddr(t))
	url, stderr, stop := startServe(t)
	require.Contains(t, stderr.String(), "chunklock: URL written to chunklock-data/serve.url (the chunklock commands run in this directory use it)")
	res := postGraphQL(t, url, "", `mutation { upsertDataset(input: {id: "moved"}) { id } }`)
	require.NotNil(t, res["data"], "%v", res)

	status := func(args ...string) (int, string, string) {
		var stdout, stderr bytes.Buffer
		code := run(t.Context(), append([]string{"chunklock", "status"}, args...), &stdout, &stderr)
		return code, stdout.String(), stderr.String()
	}
	code, out, errOut := status()
	require.Equal(t, 0, code, errOut)
	require.Contains(t, out, "moved", "the command reached the moved server")

	dead := "http://" + freeAddr(t)
	code, _, errOut = status("--url", dead)
	require.Equal(t, 1, code)
	require.Contains(t, errOut, "Is `chunklock serve` running at "+dead+"?", "--url wins over the file")
	require.NotContains(t, errOut, "serve.url")
	t.Setenv("CHUNKLOCK_URL", dead)
	code, _, errOut = status()
	require.Equal(t, 1, code)
	require.Contains(t, errOut, "running at "+dead+"?", "CHUNKLOCK_URL wins over the file")
	os.Unsetenv("CHUNKLOCK_URL")

	file := filepath.Join("chunklock-data", "serve.url")
	found, err := discoverServeURL()
	require.NoError(t, err)
	require.Equal(t, url, found)
	require.NoError(t, os.Chmod(file, 0o666))
	_, err = discoverServeURL()
	require.ErrorContains(t, err, "may be written by its group and by other users", "a file others may write is refused")
	require.NoError(t, os.Chmod(file, 0o600))
	require.NoError(t, os.Chmod(".", 0o777))
	_, err = discoverServeURL()
	require.ErrorContains(t, err, "the current directory", "a file in a directory others may write is refused: they could swap it")
	require.NoError(t, os.Chmod(".", 0o700))

	require.Equal(t, 0, stop(), stderr.String())
	_, err = os.Stat(file)
	require.True(t, errors.Is(err, os.ErrNotExist), "the file is removed on a clean stop: %v", err)

	// A file left behind by a server that was killed: the error says so.
	require.NoError(t, os.WriteFile(file, []byte(dead+"\n"), 0o600))
	code, _, errOut = status()
	require.Equal(t, 1, code)
	require.Contains(t, errOut, "running at "+dead+"?")
	require.Contains(t, errOut, "chunklock-data/serve.url names this URL: it is left behind by a server that did not stop cleanly")

	// A data directory or file that is a symbolic link is not trusted:
	// whoever may change the link chooses the URL.
	elsewhere := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(elsewhere, "serve.url"), []byte(dead+"\n"), 0o600))
	require.NoError(t, os.Remove(file))
	require.NoError(t, os.Symlink(filepath.Join(elsewhere, "serve.url"), file))
	_, err = discoverServeURL()
	require.ErrorContains(t, err, file+" is a symbolic link", "serve.url as a symbolic link is refused")
	require.NoError(t, os.RemoveAll("chunklock-data"))
	require.NoError(t, os.Symlink(elsewhere, "chunklock-data"))
	_, err = discoverServeURL()
	require.ErrorContains(t, err, "chunklock-data is a symbolic link", "chunklock-data as a symbolic link is refused")
}
