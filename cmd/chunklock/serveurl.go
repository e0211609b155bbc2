package main

// serve writes the URL it serves on to <data-dir>/serve.url while it runs
// on the embedded store; the client commands read ./chunklock-data/serve.url
// when neither --url nor CHUNKLOCK_URL is given. So a second server, moved
// to a free port because another chunklock holds 127.0.0.1:8080, is still
// the one the commands run beside it talk to.

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/chunklock/chunklock/backends/open"
)

// serveURLName is the file's name in the data directory.
const serveURLName = "serve.url"

// serveURLFile is where the client commands look for it.
var serveURLFile = filepath.Join(open.DefaultDataDir, serveURLName)

// writeServeURL writes url to the data directory's serve.url and returns
// the file's path. The embedded store's lock on the directory makes this
// server its only writer.
func writeServeURL(dataDir, url string) (string, error) {
	path := filepath.Join(dataDir, serveURLName)
	if err := os.WriteFile(path, []byte(url+"\n"), 0o600); err != nil {
		return "", fmt.Errorf("writing the server URL: %w", err)
	}
	return path, nil
}

// serveURLNote tells, in the start-up message, whether the client commands
// run here find the file.
func serveURLNote(dataDir string) string {
	if filepath.Clean(dataDir) != filepath.Clean(open.DefaultDataDir) {
		return ""
	}
	return " (the chunklock commands run in this directory use it)"
}

// serveURLSource is the url flag's source of last resort: the URL in
// ./chunklock-data/serve.url, trusted only when the user running the
// command owns the file, its directory and the current directory, nobody
// else may write them, and neither the directory nor the file is a
// symbolic link (else another user could send this user's commands, and
// token, to a server of theirs). The file is checked as opened, so it
// cannot be swapped between the check and the read.
type serveURLSource struct{}

func (serveURLSource) Lookup() (string, bool) {
	for _, p := range []string{".", filepath.Dir(serveURLFile)} {
		fi, err := os.Lstat(p)
		if err != nil || !fi.IsDir() || !ownedPrivately(fi) {
			return "", false
		}
	}
	f, err := openNoFollow(serveURLFile)
	if err != nil {
		return "", false
	}
	defer f.Close()
	if fi, err := f.Stat(); err != nil || !fi.Mode().IsRegular() || !ownedPrivately(fi) {
		return "", false
	}
	b, err := io.ReadAll(io.LimitReader(f, 4096))
	url := strings.TrimSpace(string(b))
	return url, err == nil && url != ""
}

func (serveURLSource) String() string   { return fmt.Sprintf("file %q", serveURLFile) }
func (serveURLSource) GoString() string { return "serveURLSource{}" }

// staleServeURL notes, for a refused connection, that ./chunklock-data/serve.url
// names url: a server that was killed leaves the file behind.
func staleServeURL(url string) string {
	if u, ok := (serveURLSource{}).Lookup(); !ok || u != url {
		return ""
	}
	return fmt.Sprintf(" (%s names this URL: it is left behind by a server that did not stop cleanly; delete it if no server runs there)", serveURLFile)
}
