package main

// Which server the client commands talk to. serve writes the URL it serves
// on to <data-dir>/serve.url while it runs on the embedded store; so a
// second server, moved to a free port because another chunklock holds
// 127.0.0.1:8080, is still the one the commands run beside it talk to.
//
// The commands send the API token with every request, and apply sends the
// datasets' secrets: a URL that another user chose would hand them over. So
// the URL is, in this order:
//
//  1. --url, else CHUNKLOCK_URL: where the user pointed.
//  2. ./chunklock-data/serve.url, when it exists, and only when nobody but
//     the user could have written it: the user owns the current directory,
//     ./chunklock-data and the file, none of them may be written by group
//     or others, and neither the data directory nor the file is a symbolic
//     link. A file that fails a check stops the command with the check and
//     the fix; it never falls back to the default.
//  3. With no such file, the default http://127.0.0.1:8080, and only when
//     the process listening there is the user's own (on Linux, the owner of
//     the listening socket in /proc/net/tcp and tcp6): on a shared machine
//     the default port may be another user's server. Where that cannot be
//     told, the command stops and asks for --url.

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/urfave/cli/v3"

	"github.com/chunklock/chunklock/backends/open"
)

// serveURLName is the file's name in the data directory.
const serveURLName = "serve.url"

// serveURLFile is where the client commands look for it.
var serveURLFile = filepath.Join(open.DefaultDataDir, serveURLName)

// defaultServerURL is the client commands' URL of last resort. Tests
// replace it.
var defaultServerURL = "http://127.0.0.1:8080"

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
// run here find the file, and, when they would refuse it, why.
func serveURLNote(dataDir string) string {
	if filepath.Clean(dataDir) != filepath.Clean(open.DefaultDataDir) {
		return ""
	}
	if _, err := discoverServeURL(); err != nil {
		return fmt.Sprintf("; the chunklock commands run in this directory will refuse it: %v", err)
	}
	return " (the chunklock commands run in this directory use it)"
}

// serverURL returns the URL the command talks to (see the top of this
// file), and records it as the command's --url so that messages and job
// processes name it.
func serverURL(cmd *cli.Command) (string, error) {
	if u := cmd.String("url"); u != "" {
		setURLFrom(cmd, "--url or CHUNKLOCK_URL")
		return u, nil
	}
	u, err := discoverServeURL()
	if err != nil {
		return "", err
	}
	from := serveURLFile
	if u == "" {
		u = defaultServerURL
		from = urlFromDefault + ", a process of yours listening there (no --url, CHUNKLOCK_URL or " + serveURLFile + " here)"
		if err := checkDefaultServer(u); err != nil {
			return "", err
		}
	}
	setURLFrom(cmd, from)
	return u, cmd.Set("url", u)
}

// urlFromDefault begins urlFrom's answer when serverURL fell back to
// defaultServerURL.
const urlFromDefault = "the default"

// setURLFrom notes on the command where serverURL found the server's URL,
// for errors that suggest the URL is wrong (urlFrom).
func setURLFrom(cmd *cli.Command, from string) {
	root := cmd.Root()
	if root.Metadata == nil {
		root.Metadata = map[string]any{}
	}
	root.Metadata["urlFrom"] = from
}

// urlFrom says where serverURL found the URL of cmd's server.
func urlFrom(cmd *cli.Command) string {
	if from, ok := cmd.Root().Metadata["urlFrom"].(string); ok {
		return from
	}
	return "--url or CHUNKLOCK_URL"
}

// discoverServeURL returns the URL in ./chunklock-data/serve.url; "" when
// there is no such file; an error that says which check failed and how to
// fix it when the file exists but others could have written it.
func discoverServeURL() (string, error) {
	if _, err := os.Lstat(serveURLFile); errors.Is(err, fs.ErrNotExist) {
		return "", nil
	}
	untrusted := func(problem, fix string) error {
		return fmt.Errorf("%s is not trusted: %s, so another user could have written the URL in it and would receive your token and secrets; %s, or give the server's URL yourself with --url or CHUNKLOCK_URL", serveURLFile, problem, fix)
	}
	cwd, err := os.Getwd()
	if err != nil {
		return "", untrusted("the current directory cannot be checked ("+err.Error()+")", "check its permissions")
	}
	dataDir := filepath.Dir(serveURLFile)
	for _, d := range []struct{ path, name, shown string }{
		{".", "the current directory " + cwd, cwd},
		{dataDir, dataDir, dataDir},
	} {
		fi, err := os.Lstat(d.path)
		if err != nil {
			return "", untrusted(d.name+" cannot be checked ("+err.Error()+")", "check its permissions")
		}
		if fi.Mode()&fs.ModeSymlink != 0 {
			return "", untrusted(d.name+" is a symbolic link", "replace it by the directory it points to")
		}
		if problem, fix := notPrivate(fi, d.name, d.shown); problem != "" {
			return "", untrusted(problem, fix)
		}
	}
	f, err := openNoFollow(serveURLFile)
	if err != nil {
		if fi, lerr := os.Lstat(serveURLFile); lerr == nil && fi.Mode()&fs.ModeSymlink != 0 {
			return "", untrusted(serveURLFile+" is a symbolic link", "replace it by the file it points to")
		}
		return "", untrusted(serveURLFile+" cannot be read ("+err.Error()+")", "check its permissions")
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil || !fi.Mode().IsRegular() {
		return "", untrusted(serveURLFile+" is not a regular file", "remove it")
	}
	if problem, fix := notPrivate(fi, serveURLFile, serveURLFile); problem != "" {
		return "", untrusted(problem, fix)
	}
	b, err := io.ReadAll(io.LimitReader(f, 4096))
	if u := strings.TrimSpace(string(b)); err == nil && u != "" {
		return u, nil
	}
	return "", fmt.Errorf("%s holds no URL: delete it (a server writes it when it starts), or give the server's URL with --url or CHUNKLOCK_URL", serveURLFile)
}

// checkDefaultServer returns nil when the process listening on u, the
// default URL, is the current user's own; else an error that says why
// nothing is sent there and what to do.
func checkDefaultServer(u string) error {
	const what = "give the server's URL with --url or CHUNKLOCK_URL"
	parsed, err := url.Parse(u)
	if err != nil {
		return err
	}
	port, err := strconv.Atoi(parsed.Port())
	if err != nil || parsed.Hostname() != "127.0.0.1" {
		return fmt.Errorf("the default URL %s is not of the form http://127.0.0.1:PORT; %s", u, what)
	}
	owners, err := listenerOwners(port)
	switch {
	case err != nil:
		return fmt.Errorf("cannot tell who listens on %s (the default URL) on this system (%v), so nothing was sent to it: %s", u, err, what)
	case len(owners) == 0:
		return fmt.Errorf("nothing listens on %s (the default URL): start `chunklock serve`, or %s", u, what)
	}
	for _, uid := range owners {
		if uid != os.Getuid() {
			return fmt.Errorf("%s (the default URL) is served by another user's process (uid %d), not yours: nothing was sent to it; %s (a server says its URL when it starts, and writes it to serve.url in its data directory)", u, uid, what)
		}
	}
	return nil
}

// listenerOwners returns the user ids of the processes listening on TCP
// port of 127.0.0.1 (sockets bound to it or to every address). Tests
// replace it.
var listenerOwners = localListenerOwners

// loopbackListeners parses a /proc/net/tcp or /proc/net/tcp6 table and
// returns the user ids of the sockets listening on port that a connection
// to 127.0.0.1:port may reach: bound to 127.0.0.1, to ::ffff:127.0.0.1, or
// to every address (0.0.0.0, ::).
func loopbackListeners(table string, port int) ([]int, error) {
	var uids []int
	lines := strings.Split(strings.TrimSpace(table), "\n")
	for _, line := range lines[1:] {
		f := strings.Fields(line)
		if len(f) < 8 || f[3] != "0A" { // 0A: LISTEN
			continue
		}
		hexIP, hexPort, ok := strings.Cut(f[1], ":")
		if !ok {
			return nil, fmt.Errorf("unexpected local address %q", f[1])
		}
		p, err := strconv.ParseUint(hexPort, 16, 16)
		if err != nil {
			return nil, fmt.Errorf("unexpected port %q", hexPort)
		}
		ip, err := procIP(hexIP)
		if err != nil {
			return nil, err
		}
		if int(p) != port || !(ip.IsUnspecified() || ip.Equal(net.IPv4(127, 0, 0, 1))) {
			continue
		}
		uid, err := strconv.Atoi(f[7])
		if err != nil {
			return nil, fmt.Errorf("unexpected uid %q", f[7])
		}
		uids = append(uids, uid)
	}
	return uids, nil
}

// localListenerOwners reads the listening sockets of this machine from
// /proc/net/tcp and /proc/net/tcp6 (Linux); elsewhere it cannot tell.
func localListenerOwners(port int) ([]int, error) {
	var uids []int
	for _, table := range []string{"/proc/net/tcp", "/proc/net/tcp6"} {
		b, err := os.ReadFile(table)
		if errors.Is(err, fs.ErrNotExist) && table == "/proc/net/tcp6" {
			continue // no IPv6
		}
		if err != nil {
			return nil, err
		}
		found, err := loopbackListeners(string(b), port)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", table, err)
		}
		uids = append(uids, found...)
	}
	return uids, nil
}

// procIP decodes an address of /proc/net/tcp (8 hex digits) or tcp6 (32):
// 32-bit words printed as the host reads them from the network-order bytes.
func procIP(h string) (net.IP, error) {
	if len(h) != 8 && len(h) != 32 {
		return nil, fmt.Errorf("unexpected address %q", h)
	}
	ip := make(net.IP, 0, len(h)/2)
	for i := 0; i < len(h); i += 8 {
		w, err := strconv.ParseUint(h[i:i+8], 16, 32)
		if err != nil {
			return nil, fmt.Errorf("unexpected address %q", h)
		}
		ip = binary.NativeEndian.AppendUint32(ip, uint32(w))
	}
	return ip, nil
}

// staleServeURL notes, for a refused connection, that ./chunklock-data/serve.url
// names url: a server that was killed leaves the file behind.
func staleServeURL(url string) string {
	if u, err := discoverServeURL(); err != nil || u != url {
		return ""
	}
	return fmt.Sprintf(" (%s names this URL: it is left behind by a server that did not stop cleanly; delete it if no server runs there)", serveURLFile)
}
