package main

import (
	"encoding/binary"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
)

// useDefaultURL makes url the client commands' default server URL, in
// place of http://127.0.0.1:8080, which the tests leave alone. Tests that
// use it are not parallel.
func useDefaultURL(t *testing.T, url string) { override(t, &defaultServerURL, url) }

// recorder counts the requests a server receives and keeps their
// Authorization headers.
type recorder struct {
	mu    sync.Mutex
	auths []string
}

func (r *recorder) wrap(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		r.mu.Lock()
		r.auths = append(r.auths, req.Header.Get("Authorization"))
		r.mu.Unlock()
		h.ServeHTTP(w, req)
	})
}

func (r *recorder) requests() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.auths...)
}

// foreignServer is a server that would answer anything: the one another
// user runs on the default port. It records what it receives.
func foreignServer(t *testing.T) (string, *recorder) {
	rec := &recorder{}
	hs := httptest.NewServer(rec.wrap(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"data":{"datasets":[],"jobs":[]}}`))
	})))
	t.Cleanup(hs.Close)
	return hs.URL, rec
}

// TestClientRefusesUntrustedServeURL: when ./chunklock-data/serve.url
// exists but others could have written it (a project directory created
// under umask 002, a data directory or file others may write, a symbolic
// link), the client commands say which file, which check failed and how to
// fix it, and stop: they never fall back to the default URL, where another
// user's server would receive the token (and, from apply, the secrets).
// --url and CHUNKLOCK_URL still work.
func TestClientRefusesUntrustedServeURL(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(dir)
	require.NoError(t, os.Chmod(".", 0o700))
	foreign, seen := foreignServer(t)
	useDefaultURL(t, foreign)
	mineRec := &recorder{}
	mine, _ := serveMemory(t, mineRec.wrap)
	require.NoError(t, os.Mkdir("chunklock-data", 0o700))
	file := filepath.Join("chunklock-data", "serve.url")
	require.NoError(t, os.WriteFile(file, []byte(mine+"\n"), 0o600))
	t.Setenv("CHUNKLOCK_TOKEN", "tok-secret")
	secretFile := filepath.Join(t.TempDir(), "pw")
	require.NoError(t, os.WriteFile(secretFile, []byte("warehouse-password"), 0o600))
	require.NoError(t, os.WriteFile("p.yaml", []byte("datasets:\n  - {id: wh, location: \"/wh/{dataid}\", secret: {file: "+secretFile+"}}\njobs:\n  - {id: load, output: wh}\n"), 0o600))

	code, out, errOut := cliRun(t, "status")
	require.Equal(t, 0, code, errOut)
	require.Contains(t, out, "out", "a trusted file is used")
	require.Equal(t, []string{"Bearer tok-secret"}, mineRec.requests()[len(mineRec.requests())-1:])

	for name, c := range map[string]struct {
		setup, undo func()
		want        []string
	}{
		"group-writable project directory": {
			func() { require.NoError(t, os.Chmod(".", 0o775)) }, func() { require.NoError(t, os.Chmod(".", 0o700)) },
			[]string{"the current directory " + dir + " may be written by its group", "chmod g-w " + dir},
		},
		"data directory others may write": {
			func() { require.NoError(t, os.Chmod("chunklock-data", 0o777)) }, func() { require.NoError(t, os.Chmod("chunklock-data", 0o700)) },
			[]string{"chunklock-data may be written by its group and by other users", "chmod go-w chunklock-data"},
		},
		"file others may write": {
			func() { require.NoError(t, os.Chmod(file, 0o606)) }, func() { require.NoError(t, os.Chmod(file, 0o600)) },
			[]string{file + " may be written by other users", "chmod o-w " + file},
		},
		"file as a symbolic link": {
			func() {
				require.NoError(t, os.Rename(file, file+".real"))
				require.NoError(t, os.Symlink("serve.url.real", file))
			},
			func() {
				require.NoError(t, os.Remove(file))
				require.NoError(t, os.Rename(file+".real", file))
			},
			[]string{file + " is a symbolic link", "replace it by the file it points to"},
		},
	} {
		c.setup()
		for _, args := range [][]string{{"status"}, {"apply", "-f", "p.yaml"}} {
			code, _, errOut := cliRun(t, args...)
			require.Equal(t, 1, code, "%s: %v", name, args)
			require.Contains(t, errOut, "chunklock: "+file+" is not trusted: ", name)
			for _, w := range c.want {
				require.Contains(t, errOut, w, name)
			}
			require.Contains(t, errOut, "or give the server's URL yourself with --url or CHUNKLOCK_URL", name)
		}
		require.Empty(t, seen.requests(), "%s: nothing went to the default URL", name)
		require.Contains(t, serveURLNote("./chunklock-data"), "; the chunklock commands run in this directory will refuse it: "+file+" is not trusted", "%s: serve says so at start", name)

		t.Setenv("CHUNKLOCK_URL", mine)
		code, _, errOut := cliRun(t, "status")
		require.Equal(t, 0, code, "%s: CHUNKLOCK_URL is where the user pointed: %s", name, errOut)
		os.Unsetenv("CHUNKLOCK_URL")
		code, _, errOut = cliRun(t, "status", "--url", mine)
		require.Equal(t, 0, code, "%s: --url too: %s", name, errOut)
		c.undo()
	}
	require.Empty(t, seen.requests())
}

// TestClientDefaultURLOnlyWhenOwn: with no --url, CHUNKLOCK_URL or
// ./chunklock-data/serve.url, the client commands use the default URL only
// when the process listening there is the user's own: another user's
// server gets nothing (not the token, not a secret), and the command says
// so and what to do.
func TestClientDefaultURLOnlyWhenOwn(t *testing.T) {
	t.Chdir(t.TempDir())
	rec := &recorder{}
	mine, _ := serveMemory(t, rec.wrap)
	useDefaultURL(t, mine)
	t.Setenv("CHUNKLOCK_TOKEN", "tok-secret")

	code, out, errOut := cliRun(t, "status")
	require.Equal(t, 0, code, "the default URL is served by this user: %s", errOut)
	require.Contains(t, out, "out")
	require.Contains(t, errOut, "chunklock status: the server at "+mine+", the default", "status names the server it asked when nothing pointed to one")
	sent := len(rec.requests())
	require.Positive(t, sent)

	other := os.Getuid() + 1
	for name, c := range map[string]struct {
		owners func(int) ([]int, error)
		want   string
	}{
		"another user's": {func(int) ([]int, error) { return []int{other}, nil },
			"is served by another user's process (uid " + strconv.Itoa(other) + "), not yours: nothing was sent to it"},
		"one of them another user's": {func(int) ([]int, error) { return []int{os.Getuid(), other}, nil },
			"is served by another user's process (uid " + strconv.Itoa(other) + ")"},
		"nobody's": {func(int) ([]int, error) { return nil, nil },
			"nothing listens on " + mine + " (the default URL): start `chunklock serve`"},
		"unknown": {func(int) ([]int, error) { return nil, os.ErrPermission },
			"cannot tell who listens on " + mine + " (the default URL)"},
	} {
		override(t, &listenerOwners, c.owners)
		code, _, errOut := cliRun(t, "status")
		require.Equal(t, 1, code, name)
		require.Contains(t, errOut, c.want, name)
		require.Contains(t, errOut, "give the server's URL with --url or CHUNKLOCK_URL", name)
		require.Len(t, rec.requests(), sent, "%s: nothing was sent", name)
	}
}

// TestLoopbackListeners: the owners of the sockets a connection to
// 127.0.0.1:8080 may reach are read from /proc/net/tcp and tcp6: bound to
// 127.0.0.1 or ::ffff:127.0.0.1, or to every address, and listening.
func TestLoopbackListeners(t *testing.T) {
	t.Parallel()
	// Addresses as a little-endian host prints them.
	tcp := `  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode
   0: 0100007F:1F90 00000000:0000 0A 00000000:00000000 00:00000000 00000000  1001        0 1 1 0000000000000000 100 0 0 10 0
   1: 00000000:1F90 00000000:0000 0A 00000000:00000000 00:00000000 00000000  1002        0 2 1 0000000000000000 100 0 0 10 0
   2: 0200007F:1F90 00000000:0000 0A 00000000:00000000 00:00000000 00000000  1003        0 3 1 0000000000000000 100 0 0 10 0
   3: 0100007F:1F91 00000000:0000 0A 00000000:00000000 00:00000000 00000000  1004        0 4 1 0000000000000000 100 0 0 10 0
   4: 0100007F:1F90 0100007F:C350 01 00000000:00000000 00:00000000 00000000  1005        0 5 1 0000000000000000 100 0 0 10 0
`
	tcp6 := `  sl  local_address                         remote_address                        st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode
   0: 00000000000000000000000000000000:1F90 00000000000000000000000000000000:0000 0A 00000000:00000000 00:00000000 00000000  1006        0 6 1 0000000000000000 100 0 0 10 0
   1: 0000000000000000FFFF00000100007F:1F90 00000000000000000000000000000000:0000 0A 00000000:00000000 00:00000000 00000000  1007        0 7 1 0000000000000000 100 0 0 10 0
   2: 00000000000000000000000001000000:1F90 00000000000000000000000000000000:0000 0A 00000000:00000000 00:00000000 00000000  1008        0 8 1 0000000000000000 100 0 0 10 0
`
	if binary.NativeEndian.Uint16([]byte{1, 0}) != 1 {
		t.Skip("the fixture is written as a little-endian host prints it")
	}
	uids, err := loopbackListeners(tcp, 8080)
	require.NoError(t, err)
	require.Equal(t, []int{1001, 1002}, uids, "127.0.0.1 and 0.0.0.0; not 127.0.0.2, another port or a connection")
	uids, err = loopbackListeners(tcp6, 8080)
	require.NoError(t, err)
	require.Equal(t, []int{1006, 1007}, uids, ":: and ::ffff:127.0.0.1; not ::1")
	_, err = loopbackListeners("header\n 0: 0100007F:XYZ 00000000:0000 0A 0 0 0 1001\n", 8080)
	require.Error(t, err)

	// This machine's own table: a listener of this process is this user's.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer ln.Close()
	if _, err := os.Stat("/proc/net/tcp"); err != nil {
		t.Skip("no /proc/net/tcp here")
	}
	uids, err = localListenerOwners(ln.Addr().(*net.TCPAddr).Port)
	require.NoError(t, err)
	require.Equal(t, []int{os.Getuid()}, uids)
}

// TestNotAChunklockServer: a URL that answers something other than GraphQL
// is named with where it came from and where the server's URL is found.
func TestNotAChunklockServer(t *testing.T) {
	t.Parallel()
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		http.Error(w, "Unsupported method", http.StatusNotImplemented)
	}))
	t.Cleanup(other.Close)
	var stdout, stderr lockedBuffer
	code := run(t.Context(), []string{"chunklock", "status", "--url", other.URL}, &stdout, &stderr)
	require.NotEqual(t, 0, code)
	require.Contains(t, stderr.String(), "answered HTTP 501 with something that is not GraphQL (is the URL a chunklock server's?)")
	require.Contains(t, stderr.String(), "(the URL "+other.URL+" came from --url or CHUNKLOCK_URL; set --url or CHUNKLOCK_URL to the server's, which `chunklock serve` prints")
}
