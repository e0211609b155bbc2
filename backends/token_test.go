package backends

import (
	"encoding/base64"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestTokenRoundTrip(t *testing.T) {
	tok := NewToken("load-sales", "sales.daily", "2026-11-22", 42)
	require.True(t, strings.HasPrefix(tok, "ct1."))
	key, fence, err := ParseToken(tok)
	require.NoError(t, err)
	require.Equal(t, RowKey{Dataset: "sales.daily", DataID: "2026-11-22", Job: "load-sales", Role: RoleOutput}, key)
	require.Equal(t, int64(42), fence)

	other := NewToken("load-sales", "sales.daily", "2026-11-22", 42)
	require.NotEqual(t, tok, other, "tokens carry a random nonce")
	require.NotContains(t, tok, "/", "tokens are URL-safe")
	require.NotContains(t, tok, "+")
}

func TestParseTokenRejects(t *testing.T) {
	enc := func(raw string) string { return "ct1." + base64.RawURLEncoding.EncodeToString([]byte(raw)) }
	for _, bad := range []string{
		"", "ct1.", "ct2." + NewToken("j", "d", "1", 1)[4:], "garbage", "ct1.!!!",
		enc("j/d/1/1"),                          // four parts
		enc("j/d/1/1/nonce/extra"),              // six parts
		enc("j/d/1/one/nonce"),                  // fence not a number
		enc("j/d/a b/1/nonce"),                  // invalid dataid
		enc("j/d//1/nonce"),                     // empty dataid
		enc("j/d/1/99999999999999999999/nonce"), // fence overflows
	} {
		_, _, err := ParseToken(bad)
		require.ErrorIs(t, err, ErrStaleClaim, "%q", bad)
	}
}
