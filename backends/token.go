package backends

import (
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"strconv"
	"strings"
)

// Claim tokens are opaque to clients. Inside, a token names the output row
// it claims, the fencing number and a random nonce, so a store can find the
// row without a secondary index and a token cannot be guessed from another:
//
//	"ct1." + base64url(job "/" dataset "/" dataid "/" fence "/" nonce)
//
// '/' appears in none of the parts.
const tokenPrefix = "ct1."

// NewToken returns a fresh claim token for the OUTPUT row (dataset, dataid, job).
func NewToken(job, dataset, dataid string, fence int64) string {
	var nonce [12]byte
	if _, err := rand.Read(nonce[:]); err != nil {
		panic("chunklock: no randomness: " + err.Error())
	}
	raw := strings.Join([]string{job, dataset, dataid, strconv.FormatInt(fence, 10), hex.EncodeToString(nonce[:])}, "/")
	return tokenPrefix + base64.RawURLEncoding.EncodeToString([]byte(raw))
}

// ParseToken returns the OUTPUT row key and fence a token names. A malformed
// token is a STALE_CLAIM error: it names no live claim.
func ParseToken(token string) (RowKey, int64, error) {
	bad := StaleClaim("claim token is not valid: it names no live claim")
	if !strings.HasPrefix(token, tokenPrefix) {
		return RowKey{}, 0, bad
	}
	raw, err := base64.RawURLEncoding.DecodeString(token[len(tokenPrefix):])
	if err != nil {
		return RowKey{}, 0, bad
	}
	parts := strings.Split(string(raw), "/")
	if len(parts) != 5 {
		return RowKey{}, 0, bad
	}
	fence, err := strconv.ParseInt(parts[3], 10, 64)
	if err != nil || ValidateDataID(parts[2]) != nil {
		return RowKey{}, 0, bad
	}
	return RowKey{Dataset: parts[1], DataID: parts[2], Job: parts[0], Role: RoleOutput}, fence, nil
}
