// Package vaulttest runs real Vault servers in dev mode on loopback for
// tests: in memory, unsealed, with a root token chosen by the test.
//
// The Vault binary comes from CHUNKLOCK_VAULT_BIN, else from the cache that
// scripts/vault.sh fills (${CHUNKLOCK_VAULT_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/chunklock/vault-1.21.0}/vault).
// Without a binary, tests skip, unless CI=true or CHUNKLOCK_REQUIRE_VAULT=1,
// where they fail.
package vaulttest

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"time"
)

// Version is the Vault release scripts/vault.sh builds.
const Version = "1.21.0"

// CachePath is where scripts/vault.sh puts the binary.
func CachePath() string {
	dir := os.Getenv("CHUNKLOCK_VAULT_CACHE")
	if dir == "" {
		base := os.Getenv("XDG_CACHE_HOME")
		if base == "" {
			home, _ := os.UserHomeDir()
			base = filepath.Join(home, ".cache")
		}
		dir = filepath.Join(base, "chunklock", "vault-"+Version)
	}
	return filepath.Join(dir, "vault")
}

// Required reports whether a missing Vault binary must fail the tests.
func Required() bool {
	return os.Getenv("CI") == "true" || os.Getenv("CHUNKLOCK_REQUIRE_VAULT") == "1"
}

// Binary finds the Vault binary. It returns an error when
// CHUNKLOCK_VAULT_BIN names a missing file, or when no binary is found and
// Required() holds; skip is set when no binary is found and tests may skip.
func Binary() (path, skip string, err error) {
	if p := os.Getenv("CHUNKLOCK_VAULT_BIN"); p != "" {
		if !executable(p) {
			return "", "", fmt.Errorf("CHUNKLOCK_VAULT_BIN=%s is not an executable file; build it with scripts/vault.sh", p)
		}
		return p, "", nil
	}
	p := CachePath()
	if executable(p) {
		return p, "", nil
	}
	msg := fmt.Sprintf("no Vault binary: CHUNKLOCK_VAULT_BIN is unset and %s does not exist; run scripts/vault.sh to build it (once; 6 to 20 minutes on 2 cores)", p)
	if Required() {
		return "", "", errors.New(msg + " (required because CI=true or CHUNKLOCK_REQUIRE_VAULT=1)")
	}
	return "", msg, nil
}

func executable(p string) bool {
	st, err := os.Stat(p)
	return err == nil && st.Mode().IsRegular() && st.Mode()&0o111 != 0
}

// Server is a Vault dev server process.
type Server struct {
	// Addr is the server's address, http://127.0.0.1:<port>.
	Addr string
	// RootToken is the dev server's root token.
	RootToken string

	bin, dir string
	port     int

	mu     sync.Mutex
	cmd    *exec.Cmd
	exited chan struct{}
}

// Start starts a dev server on a free loopback port. dir receives its log
// (vault-<port>.log) and serves as its HOME; Stop the server when done.
func Start(bin, dir string) (*Server, error) {
	var lastErr error
	for attempt := 0; attempt < 5; attempt++ {
		port, err := freePortPair()
		if err != nil {
			return nil, err
		}
		s := &Server{
			Addr:      fmt.Sprintf("http://127.0.0.1:%d", port),
			RootToken: "root-" + randHex(16),
			bin:       bin,
			dir:       dir,
			port:      port,
		}
		if lastErr = s.start(); lastErr == nil {
			return s, nil
		}
	}
	return nil, lastErr
}

// Restart starts a new dev server on the same port, with the same root
// token, after Kill. Dev servers keep everything in memory: the new one is
// empty.
func (s *Server) Restart() error {
	var err error
	// The port was just released; another process may hold it briefly.
	for attempt := 0; attempt < 10; attempt++ {
		if err = s.start(); err == nil {
			return nil
		}
		time.Sleep(200 * time.Millisecond)
	}
	return err
}

func (s *Server) start() error {
	logPath := filepath.Join(s.dir, fmt.Sprintf("vault-%d.log", s.port))
	logf, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return err
	}
	cmd := exec.Command(s.bin, "server", "-dev",
		"-dev-root-token-id="+s.RootToken,
		"-dev-listen-address=127.0.0.1:"+strconv.Itoa(s.port),
		"-dev-no-store-token",
	)
	// A clean environment: no VAULT_* of the caller, no token helper.
	cmd.Env = []string{"HOME=" + s.dir, "PATH=" + os.Getenv("PATH"), "VAULT_LOG_LEVEL=warn"}
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		logf.Close()
		return fmt.Errorf("starting %s: %w", s.bin, err)
	}
	exited := make(chan struct{})
	go func() {
		_ = cmd.Wait()
		logf.Close()
		close(exited)
	}()
	s.mu.Lock()
	s.cmd, s.exited = cmd, exited
	s.mu.Unlock()

	deadline := time.Now().Add(90 * time.Second)
	client := &http.Client{Timeout: 2 * time.Second}
	for {
		select {
		case <-exited:
			return fmt.Errorf("vault dev server on port %d exited during start-up: %s", s.port, tail(logPath))
		default:
		}
		if ready(client, s.Addr) {
			return nil
		}
		if time.Now().After(deadline) {
			s.Kill()
			return fmt.Errorf("vault dev server on port %d did not become ready in 90s: %s", s.port, tail(logPath))
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func ready(c *http.Client, addr string) bool {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, addr+"/v1/sys/health", nil)
	resp, err := c.Do(req)
	if err != nil {
		return false
	}
	resp.Body.Close()
	return resp.StatusCode == http.StatusOK // initialized, unsealed, active
}

// Kill kills the server process (SIGKILL) and waits for it to exit.
func (s *Server) Kill() {
	s.mu.Lock()
	cmd, exited := s.cmd, s.exited
	s.mu.Unlock()
	if cmd == nil {
		return
	}
	_ = cmd.Process.Kill()
	<-exited
}

// Stop kills the server; it is Kill under the name tests expect.
func (s *Server) Stop() { s.Kill() }

// freePortPair finds a loopback port p with p+1 free too (a dev server's
// cluster listener takes p+1).
func freePortPair() (int, error) {
	for i := 0; i < 20; i++ {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return 0, err
		}
		p := l.Addr().(*net.TCPAddr).Port
		l2, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(p+1))
		l.Close()
		if err == nil {
			l2.Close()
			return p, nil
		}
	}
	return 0, errors.New("no free pair of loopback ports found")
}

func tail(path string) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return "(no log)"
	}
	if len(b) > 2000 {
		b = b[len(b)-2000:]
	}
	return string(bytes.TrimSpace(b))
}

func randHex(n int) string {
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		panic(err)
	}
	return hex.EncodeToString(b)
}
