package webhook

import (
	"encoding/json"
	"strings"
)

// RemapRecord moves the position in the event log that a webhook's record
// holds (its "seq": the last event looked at) to the same event of a copy
// of the store whose events were numbered anew (`chunklock store copy`;
// storecopy.Options.RemapRecord): seq maps a Seq of the source to the Seq
// the copy gave the same event. Other records come back as they are.
func RemapRecord(key string, value []byte, seq func(int64) int64) []byte {
	if !strings.HasPrefix(key, "webhook/") {
		return value
	}
	var m map[string]json.RawMessage
	if json.Unmarshal(value, &m) != nil {
		return value
	}
	var n int64
	if raw, ok := m["seq"]; !ok || json.Unmarshal(raw, &n) != nil {
		return value
	}
	m["seq"], _ = json.Marshal(seq(n))
	out, err := json.Marshal(m)
	if err != nil {
		return value
	}
	return out
}
