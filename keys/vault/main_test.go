package vault_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/hashicorp/vault/api"
	"github.com/stretchr/testify/require"

	"github.com/chunklock/chunklock/keys/vault"
	"github.com/chunklock/chunklock/keys/vault/vaulttest"
)

// The shared dev server of this package's integration tests.
var (
	devBin     string
	devSkip    string
	devDir     string
	dev        *vaulttest.Server
	devServerT string // the server token, made from ServerPolicy
)

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	var err error
	devBin, devSkip, err = vaulttest.Binary()
	if err != nil {
		fmt.Fprintln(os.Stderr, "keys/vault:", err)
		return 1
	}
	if devBin != "" {
		if devDir, err = os.MkdirTemp("", "chunklock-vault-test-"); err != nil {
			fmt.Fprintln(os.Stderr, "keys/vault:", err)
			return 1
		}
		defer os.RemoveAll(devDir)
		if dev, err = vaulttest.Start(devBin, devDir); err != nil {
			fmt.Fprintln(os.Stderr, "keys/vault: starting a Vault dev server:", err)
			return 1
		}
		defer dev.Stop()
		if devServerT, err = prepare(dev, ""); err != nil {
			fmt.Fprintln(os.Stderr, "keys/vault: preparing the Vault dev server:", err)
			return 1
		}
	}
	return m.Run()
}

// prepare runs Setup with the root token and creates the server's token
// from ServerPolicy (with id, when given, so that a restarted server can
// have the same one).
func prepare(s *vaulttest.Server, id string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cfg := vault.DefaultConfig()
	cfg.Address, cfg.Token = s.Addr, s.RootToken
	if err := vault.Setup(ctx, cfg); err != nil {
		return "", err
	}
	// Setup is idempotent.
	if err := vault.Setup(ctx, cfg); err != nil {
		return "", fmt.Errorf("second Setup: %w", err)
	}
	root, err := rootClient(s)
	if err != nil {
		return "", err
	}
	body := map[string]any{
		"policies":          []string{vault.ServerPolicyName(vault.DefaultPrefix)},
		"no_default_policy": true,
		"no_parent":         true,
		"display_name":      "chunklock-server",
	}
	if id != "" {
		body["id"] = id
	}
	sec, err := root.Logical().WriteWithContext(ctx, "auth/token/create", body)
	if err != nil {
		return "", err
	}
	return sec.Auth.ClientToken, nil
}

func rootClient(s *vaulttest.Server) (*api.Client, error) {
	c, err := api.NewClient(&api.Config{Address: s.Addr, MaxRetries: 0})
	if err != nil {
		return nil, err
	}
	c.SetToken(s.RootToken)
	c.ClearNamespace()
	return c, nil
}

// needVault skips (or, when Vault is required, has already failed in
// TestMain) a test that needs the dev server.
func needVault(t *testing.T) {
	t.Helper()
	if devBin == "" {
		t.Skip(devSkip)
	}
}

// newKeyring returns a keyring on the shared dev server with the server's
// token.
func newKeyring(t *testing.T, mod ...func(*vault.Config)) *vault.Keyring {
	t.Helper()
	needVault(t)
	cfg := vault.DefaultConfig()
	cfg.Address, cfg.Token = dev.Addr, devServerT
	for _, m := range mod {
		m(&cfg)
	}
	k, err := vault.New(cfg)
	require.NoError(t, err)
	return k
}

// root returns a root client of the shared dev server.
func root(t *testing.T) *api.Client {
	t.Helper()
	needVault(t)
	c, err := rootClient(dev)
	require.NoError(t, err)
	return c
}

// mintToken creates a token with the root token.
func mintToken(t *testing.T, c *api.Client, body map[string]any) string {
	t.Helper()
	sec, err := c.Logical().Write("auth/token/create", body)
	require.NoError(t, err)
	return sec.Auth.ClientToken
}

func randHex(n int) string {
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		panic(err)
	}
	return hex.EncodeToString(b)
}
