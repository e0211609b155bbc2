package backends

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"sync"
)

// SlotCodec encodes slot records as JSON and decodes them, remembering
// the last encodings of each record it wrote or read. A claim round reads
// back its job's record exactly as an earlier round wrote it, and an
// ending reads it as a claim left it: such a record is copied from memory
// instead of parsed again, token by token. Backends whose stored bytes
// are the bytes written (PostgreSQL's text column, etcd values) share one
// codec per store. It keeps slotEncodings versions per record key (a
// reader may see a version older than the last one written, which is
// still being committed), a handful of keys per limited job or pool.
type SlotCodec struct {
	mu   sync.Mutex
	last map[string][]slotEncoding // newest last
}

// slotEncodings is how many versions of each record SlotCodec keeps.
const slotEncodings = 4

type slotEncoding struct {
	raw []byte
	rec Slots
}

// Encode marshals s and remembers the encoding.
func (c *SlotCodec) Encode(s Slots) ([]byte, error) {
	raw, err := json.Marshal(s)
	if err != nil {
		return nil, err
	}
	c.remember(s.Key, raw, s)
	return raw, nil
}

// Decode unmarshals the record stored under key. raw may be reused by the
// caller afterwards; the answer is the caller's own copy.
func (c *SlotCodec) Decode(key string, raw []byte) (*Slots, error) {
	c.mu.Lock()
	for _, e := range c.last[key] {
		if bytes.Equal(e.raw, raw) {
			s := cloneSlots(e.rec)
			c.mu.Unlock()
			return &s, nil
		}
	}
	c.mu.Unlock()
	var s Slots
	if err := json.Unmarshal(raw, &s); err != nil {
		return nil, fmt.Errorf("slot record %s is corrupt: %w", key, err)
	}
	s.Key = key
	c.remember(key, slices.Clone(raw), s)
	return &s, nil
}

func (c *SlotCodec) remember(key string, raw []byte, s Slots) {
	s = cloneSlots(s)
	s.Key = key
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.last == nil {
		c.last = map[string][]slotEncoding{}
	}
	versions := c.last[key]
	if len(versions) == slotEncodings {
		versions = slices.Delete(versions, 0, 1)
	}
	c.last[key] = append(versions, slotEncoding{raw: raw, rec: s})
}

// cloneSlots copies s deeply enough that changing the copy's holders,
// ended tokens or seeded versions leaves s as it was.
func cloneSlots(s Slots) Slots {
	s.Holders = slices.Clone(s.Holders)
	s.Ended = slices.Clone(s.Ended)
	s.Seeded = maps.Clone(s.Seeded)
	return s
}
