package server_test

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/vault/api"
	"github.com/stretchr/testify/require"

	"github.com/chunklock/chunklock/backends"
	"github.com/chunklock/chunklock/keys/vault"
	"github.com/chunklock/chunklock/keys/vault/vaulttest"
	"github.com/chunklock/chunklock/server"
)

// vaultServer is a real Vault server for the end-to-end tests. Unlike a dev
// server it keeps its data in files (in the test's temporary directory) and
// is initialized with a single unseal key, so that it can be killed and
// started again on the same address with its transit keys, policies and
// tokens intact, as a production Vault restarts.
type vaultServer struct {
	t         *testing.T
	addr      string
	rootToken string
	unsealKey string
	bin, dir  string
	port      int

	mu     sync.Mutex
	cmd    *exec.Cmd
	exited chan struct{}
}

// startVault starts, initializes and unseals a Vault server, stopped at the
// end of the test. It skips the test when no Vault binary is found (and
// fails it where Vault is required: CI=true or CHUNKLOCK_REQUIRE_VAULT=1).
func startVault(t *testing.T) *vaultServer {
	t.Helper()
	bin, skip, err := vaulttest.Binary()
	require.NoError(t, err)
	if bin == "" {
		t.Skip(skip)
	}
	v := &vaultServer{t: t, bin: bin, dir: t.TempDir()}
	var lastErr error
	for attempt := 0; attempt < 5; attempt++ {
		if v.port, err = freePortPair(); err != nil {
			t.Fatal(err)
		}
		v.addr = fmt.Sprintf("http://127.0.0.1:%d", v.port)
		if lastErr = v.start(); lastErr == nil {
			break
		}
	}
	require.NoError(t, lastErr, "starting a Vault server")
	t.Cleanup(v.kill)

	c := v.client()
	init, err := c.Sys().Init(&api.InitRequest{SecretShares: 1, SecretThreshold: 1})
	require.NoError(t, err, "initializing Vault")
	v.rootToken, v.unsealKey = init.RootToken, init.Keys[0]
	v.unseal()
	return v
}

// start runs the server process and waits until it answers HTTP.
func (v *vaultServer) start() error {
	data := filepath.Join(v.dir, "data")
	cfg := fmt.Sprintf(`storage "file" { path = %q }
listener "tcp" {
  address         = "127.0.0.1:%d"
  cluster_address = "127.0.0.1:%d"
  tls_disable     = true
}
disable_mlock = true
api_addr      = "http://127.0.0.1:%d"
cluster_addr  = "http://127.0.0.1:%d"
`, data, v.port, v.port+1, v.port, v.port+1)
	cfgPath := filepath.Join(v.dir, "vault.hcl")
	if err := os.WriteFile(cfgPath, []byte(cfg), 0o600); err != nil {
		return err
	}
	logPath := filepath.Join(v.dir, "vault.log")
	logf, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return err
	}
	cmd := exec.Command(v.bin, "server", "-config="+cfgPath)
	cmd.Env = []string{"HOME=" + v.dir, "PATH=" + os.Getenv("PATH"), "VAULT_LOG_LEVEL=warn"}
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		logf.Close()
		return err
	}
	exited := make(chan struct{})
	go func() {
		_ = cmd.Wait()
		logf.Close()
		close(exited)
	}()
	v.mu.Lock()
	v.cmd, v.exited = cmd, exited
	v.mu.Unlock()

	deadline := time.Now().Add(60 * time.Second)
	hc := &http.Client{Timeout: 2 * time.Second}
	for {
		select {
		case <-exited:
			b, _ := os.ReadFile(logPath)
			return fmt.Errorf("vault exited during start-up: %s", bytes.TrimSpace(b))
		default:
		}
		if resp, err := hc.Get(v.addr + "/v1/sys/health"); err == nil {
			resp.Body.Close()
			return nil
		}
		if time.Now().After(deadline) {
			v.kill()
			return fmt.Errorf("vault did not answer on port %d in 60s", v.port)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// unseal unseals the server and waits until it is active.
func (v *vaultServer) unseal() {
	v.t.Helper()
	c := v.client()
	_, err := c.Sys().Unseal(v.unsealKey)
	require.NoError(v.t, err, "unsealing Vault")
	hc := &http.Client{Timeout: 2 * time.Second}
	require.Eventually(v.t, func() bool {
		resp, err := hc.Get(v.addr + "/v1/sys/health")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	}, time.Minute, 50*time.Millisecond, "Vault did not become active after unsealing")
}

// kill kills the server (SIGKILL) and waits for it to exit.
func (v *vaultServer) kill() {
	v.mu.Lock()
	cmd, exited := v.cmd, v.exited
	v.mu.Unlock()
	if cmd == nil {
		return
	}
	_ = cmd.Process.Kill()
	<-exited
}

// restart starts the killed server again on the same address, with the
// same data, and unseals it.
func (v *vaultServer) restart() {
	v.t.Helper()
	var err error
	for attempt := 0; attempt < 20; attempt++ {
		if err = v.start(); err == nil {
			break
		}
		time.Sleep(200 * time.Millisecond)
	}
	require.NoError(v.t, err, "restarting Vault")
	v.unseal()
}

// client returns a root client.
func (v *vaultServer) client() *api.Client {
	v.t.Helper()
	c, err := api.NewClient(&api.Config{Address: v.addr, MaxRetries: 0})
	require.NoError(v.t, err)
	c.SetToken(v.rootToken)
	c.ClearNamespace()
	return c
}

// setup runs vault.Setup with the root token and returns a token with
// the server policy (vault.ServerPolicy) only, as chunklock runs with.
func (v *vaultServer) setup() string {
	v.t.Helper()
	cfg := vault.DefaultConfig()
	cfg.Address, cfg.Token = v.addr, v.rootToken
	require.NoError(v.t, vault.Setup(context.Background(), cfg))
	return v.mint(map[string]any{
		"policies":          []string{vault.ServerPolicyName(vault.DefaultPrefix)},
		"no_default_policy": true,
		"no_parent":         true,
		"display_name":      "chunklock-server",
	})
}

// mint creates a token with the root token.
func (v *vaultServer) mint(body map[string]any) string {
	v.t.Helper()
	sec, err := v.client().Logical().Write("auth/token/create", body)
	require.NoError(v.t, err)
	return sec.Auth.ClientToken
}

// keyring returns a Vault keyring using token, retrying once, quickly.
func (v *vaultServer) keyring(token string) *vault.Keyring {
	v.t.Helper()
	cfg := vault.DefaultConfig()
	cfg.Address, cfg.Token = v.addr, token
	cfg.Retries, cfg.RetryWaitMin, cfg.RetryWaitMax = 1, 50*time.Millisecond, 100*time.Millisecond
	k, err := vault.New(cfg)
	require.NoError(v.t, err)
	return k
}

// newVaultStack serves store with the Vault keyring (server token from
// ServerPolicy) as its default keyring, and the usual test tokens.
func newVaultStack(t *testing.T, store backends.Store, k *vault.Keyring) *stack {
	t.Helper()
	return newStack(t, store, withConfig(func(c *server.Config) { c.Keyring = k }))
}

// freePortPair finds a loopback port p with p+1 free too (Vault's cluster
// listener takes p+1).
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
	return 0, fmt.Errorf("no free pair of loopback ports found")
}
