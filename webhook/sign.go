package webhook

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"strings"
)

// Headers of a delivery.
const (
	// HeaderSignature holds "sha256=" and the hex HMAC-SHA256 of the body
	// keyed with the webhook secret.
	HeaderSignature = "Chunklock-Signature"
	// HeaderEventID holds the alert's stable id (Alert.ID): a receiver
	// drops an id it has seen.
	HeaderEventID = "Chunklock-Event-Id"
	// HeaderEventKind holds the alert's kind (Alert.Kind).
	HeaderEventKind = "Chunklock-Event-Kind"
)

// Sign returns the value of HeaderSignature for body.
func Sign(secret, body []byte) string {
	m := hmac.New(sha256.New, secret)
	m.Write(body)
	return "sha256=" + hex.EncodeToString(m.Sum(nil))
}

// Verify tells whether signature (the HeaderSignature value) is the
// signature of body with secret, in constant time.
func Verify(secret, body []byte, signature string) bool {
	hexSum, ok := strings.CutPrefix(signature, "sha256=")
	if !ok {
		return false
	}
	got, err := hex.DecodeString(hexSum)
	if err != nil {
		return false
	}
	m := hmac.New(sha256.New, secret)
	m.Write(body)
	return hmac.Equal(got, m.Sum(nil))
}
