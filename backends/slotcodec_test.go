package backends

import (
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
