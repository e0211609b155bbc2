package server_test

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/chunklock/chunklock/internal/teststores"
	"github.com/chunklock/chunklock/keys/age"
	"github.com/chunklock/chunklock/server"
)

// An open server (no tokens) answers only requests addressed to a loopback
// host, so a page that rebinds its domain to 127.0.0.1 cannot drive it.
func TestOpenServerRefusesForeignHosts(t *testing.T) {
	t.Parallel()
	cfg := server.DefaultConfig()
	cfg.Store, cfg.Keyring = teststores.Memory(nil), age.New()
	srv, err := server.New(cfg)
	require.NoError(t, err)
	require.True(t, srv.Open())
	for host, want := range map[string]int{
		"127.0.0.1:8080":         http.StatusOK,
		"localhost:8080":         http.StatusOK,
		"LOCALHOST":              http.StatusOK,
		"[::1]:8080":             http.StatusOK,
		"127.0.0.2":              http.StatusOK,
		"evil.example:8080":      http.StatusMisdirectedRequest,
		"localhost.evil.example": http.StatusMisdirectedRequest,
		"10.0.0.1:8080":          http.StatusMisdirectedRequest,
		"":                       http.StatusMisdirectedRequest,
	} {
		req := httptest.NewRequest(http.MethodPost, "/graphql", strings.NewReader(`{"query":"{ datasets { id } }"}`))
		req.Header.Set("Content-Type", "application/json")
		req.Host = host
		rec := httptest.NewRecorder()
		srv.Handler().ServeHTTP(rec, req)
		require.Equal(t, want, rec.Code, "Host %q: %s", host, rec.Body.String())
	}
}
