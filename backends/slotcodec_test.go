package backends

import (
	"bytes"
	"encoding/json"
	"reflect"
	"testing"
	"time"
)

func TestSlotCodecCopiesWhatItRemembers(t *testing.T) {
	var c SlotCodec
	tok := NewToken("j", "out", "2026-01-02", 7)
	s := Slots{Key: "job/j", Holders: []SlotHolder{{Job: "j", Dataset: "out", DataID: "2026-01-02", Token: tok,
		LeaseExpiresAt: time.UnixMicro(1_700_000_000_000_000).UTC()}}, Seeded: map[string]int64{"j": 3}}
	raw, err := c.Encode(s)
	if err != nil {
		t.Fatal(err)
	}
	got, err := c.Decode("job/j", raw)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(*got, s) {
		t.Fatalf("decoded %+v, want %+v", *got, s)
	}
	// The answer is the caller's: changing it leaves the next answer alone.
	got.Holders[0].Token = "changed"
	got.Holders = append(got.Holders, SlotHolder{Token: "x"})
	got.Seeded["j"] = 99
	again, err := c.Decode("job/j", raw)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(*again, s) {
		t.Fatalf("after changing an answer, decoded %+v, want %+v", *again, s)
	}
	// Other bytes are parsed, not taken from memory.
	other, err := c.Decode("job/j", []byte(`{"Holders":[],"Seeded":{"j":4}}`))
	if err != nil {
		t.Fatal(err)
	}
	if len(other.Holders) != 0 || other.Seeded["j"] != 4 || other.Key != "job/j" {
		t.Fatalf("decoded %+v", *other)
	}
	if _, err := c.Decode("job/j", []byte(`{"Holders":[{"t":"not a token","l":1}]}`)); err == nil {
		t.Fatal("a corrupt record decoded")
	}
}

// The codec writes records field by field; its bytes must stay those of
// json.Marshal, which stored records were written with, and read back
// whatever json.Marshal wrote, escapes included.
func TestSlotCodecWritesWhatJSONWrites(t *testing.T) {
	lease := time.UnixMicro(1_700_000_000_123_456).UTC()
	holder := func(job, dataset, dataid string, fence int64) SlotHolder {
		return SlotHolder{Job: job, Dataset: dataset, DataID: dataid, Token: NewToken(job, dataset, dataid, fence), LeaseExpiresAt: lease}
	}
	odd := holder("j<&>", "out\u2028", "2026-01-02", 1) // escaped by encoding/json
	records := []Slots{
		{Key: "job/j"},
		{Key: "job/j", Holders: []SlotHolder{}, Seeded: map[string]int64{}},
		{Key: "job/j", Holders: []SlotHolder{holder("j", "out", "2026-01-02", 7), holder("j", "out", "2026-01-03", 8)}, Seeded: map[string]int64{"j": 3, "a": 9}},
		{Key: "pool/warehouse <4>", Pool: Pool{ID: "warehouse <4>", Description: "loads \"at once\"", Slots: 4,
			CreatedAt: lease, UpdatedAt: lease.Add(time.Hour)}, Holders: []SlotHolder{holder("a", "b", "7", 1)}},
		{Key: "ended/job/j", Ended: []string{NewToken("j", "out", "1", 2), "not a token <x>"}},
		{Key: "job/j<&>", Holders: []SlotHolder{odd, holder("j", "out", "9", 2)}, Ended: []string{odd.Token}},
		{Key: "job/j", Holders: []SlotHolder{{Job: "j", Dataset: "out", DataID: "1", Token: "ct1.x", LeaseExpiresAt: time.UnixMicro(-5).UTC()}}},
	}
	for _, s := range records {
		want, err := json.Marshal(s)
		if err != nil {
			t.Fatal(err)
		}
		var c SlotCodec
		got, err := c.Encode(s)
		if err != nil {
			t.Fatal(err)
		}
		if string(got) != string(want) {
			t.Fatalf("encoded\n%s\nwant (json.Marshal)\n%s", got, want)
		}
		if len(s.Holders) > 0 && s.Holders[0].Token == "ct1.x" {
			continue // not a token: decoding it fails, as below
		}
		var fresh SlotCodec // decodes, not copies
		back, err := fresh.Decode(s.Key, want)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(*back, s) {
			t.Fatalf("decoded %+v, want %+v", *back, s)
		}
		// The same record with other spacing reads the same.
		var spaced bytes.Buffer
		if err := json.Indent(&spaced, want, "", "  "); err != nil {
			t.Fatal(err)
		}
		if back, err = fresh.Decode(s.Key, spaced.Bytes()); err != nil || !reflect.DeepEqual(*back, s) {
			t.Fatalf("decoded (indented) %+v, %v; want %+v", back, err, s)
		}
	}
	var c SlotCodec
	if _, err := c.Decode("job/j", []byte(`{"Holders":[{"t":"ct1.x","l":1}]}`)); err == nil {
		t.Fatal("a holder whose token names no claim decoded")
	}
}
