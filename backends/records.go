package backends

// Records are small named documents the server keeps in the store for its
// own bookkeeping, outside the catalog and the status table: a webhook's
// delivery cursor and the lease of the replica delivering it. Each is
// written whole with a compare-and-swap on its version, so that replicas
// sharing a store agree on one writer at a time.

// Record is one record. Version is 0 for a record never written and
// changes (grows) with every write; records are never deleted.
type Record struct {
	Key     string
	Value   []byte
	Version int64
}

// MaxRecordKeyBytes and MaxRecordValueBytes bound a record.
const (
	MaxRecordKeyBytes   = 256
	MaxRecordValueBytes = 256 << 10
)

// ValidateRecordKey checks a record key: 1-256 bytes of [A-Za-z0-9._:/=+-].
func ValidateRecordKey(key string) error {
	if key == "" || len(key) > MaxRecordKeyBytes {
		return InvalidArgument("a record key has 1-%d bytes, got %d", MaxRecordKeyBytes, len(key))
	}
	for i := 0; i < len(key); i++ {
		c := key[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '_' ||
			c == ':' || c == '/' || c == '=' || c == '+' || c == '-') {
			return InvalidArgument("record key %q has a character outside [A-Za-z0-9._:/=+-]", key)
		}
	}
	return nil
}
