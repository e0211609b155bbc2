package backends

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"time"
)

// The codec's bytes and answers must be those of json.Marshal(Slots) and
// json.Unmarshal into Slots (what SlotCodec did before fbae5b1).

func oldDecode(key string, raw []byte) (*Slots, error) {
	var s Slots
	if err := json.Unmarshal(raw, &s); err != nil {
		return nil, err
	}
	s.Key = key
	return &s, nil
}

func checkDecodeLikeJSON(t *testing.T, raw []byte) {
	t.Helper()
	want, werr := oldDecode("k", raw)
	var c SlotCodec
	got, gerr := c.Decode("k", raw)
	if (werr == nil) != (gerr == nil) {
		t.Fatalf("Decode(%q): err %v, json.Unmarshal err %v", raw, gerr, werr)
	}
	if werr == nil && !reflect.DeepEqual(got, want) {
		t.Fatalf("Decode(%q) = %#v, json.Unmarshal %#v", raw, got, want)
	}
	// and a second decode from the codec's memory answers the same
	if gerr == nil {
		again, err := c.Decode("k", raw)
		if err != nil || !reflect.DeepEqual(again, want) {
			t.Fatalf("Decode(%q) again = %#v, %v", raw, again, err)
		}
	}
}

func checkEncodeLikeJSON(t *testing.T, s Slots) {
	t.Helper()
	want, werr := json.Marshal(s)
	got, gerr := marshalSlots(s)
	if (werr == nil) != (gerr == nil) {
		t.Fatalf("marshalSlots(%#v): %q, err %v; json.Marshal err %v", s, got, gerr, werr)
	}
	if werr == nil && string(got) != string(want) {
		t.Fatalf("marshalSlots(%#v)\n%s\njson.Marshal\n%s", s, got, want)
	}
}

func TestSlotCodecDecodesLikeJSON(t *testing.T) {
	tok := NewToken("j", "out", "2026-01-02", 7)
	tok2 := NewToken("j", "out", "2026-01-03", 8)
	h := func(t string, l string) string { return `{"t":"` + t + `","l":` + l + `}` }
	inputs := []string{
		`{}`, `null`, `[]`, `""`, `{"Key":"x"}`, `{"Holders":null}`, `{"Holders":[]}`,
		`{"Holders":[` + h(tok, "5") + `]}`,
		`{"Holders":[` + h(tok, "5") + `,` + h(tok, "5") + `]}`,
		`{"Holders":[` + h(tok, "5") + `,` + h(tok2, "-9223372036854775808") + `]}`,
		`{"Holders":[` + h(tok, "9223372036854775807") + `]}`,
		`{"Holders":[` + h(tok, "9223372036854775808") + `]}`,
		`{"Holders":[` + h(tok, "1e3") + `]}`,
		`{"Holders":[` + h(tok, "-0") + `]}`,
		`{"Holders":[` + h(tok, "1.0") + `]}`,
		`{"Holders":[` + h(tok, "null") + `]}`,
		`{"Holders":[` + h(tok, `"5"`) + `]}`,
		`{"Holders":[` + h("ct1.x", "5") + `]}`,
		`{"Holders":[` + h("", "5") + `]}`,
		`{"Holders":[` + h(tok, "5") + `,null]}`,
		`{"Holders":[null]}`, `{"Holders":[{}]}`, `{"Holders":5}`, `{"Holders":"x"}`, `{"Holders":{}}`, `{"Holders":true}`,
		`{"Holders":[{"t":"` + tok + `"}]}`,
		`{"Holders":[{"l":5,"t":"` + tok + `"}]}`,
		`{"Holders":[{"T":"` + tok + `","L":5}]}`,
		`{"Holders":[{"t":"` + tok + `","l":5,"x":"}"}]}`,
		`{"Holders":[{"t":"` + tok + `","l":5,"t":"ct1.x"}]}`,
		`{"Holders":[{"t":"` + tok + `","t":"` + tok2 + `","l":5}]}`,
		`{"Holders":[{"t":"\u0063` + tok[1:] + `","l":5}]}`,
		`{"Holders":[ ` + h(tok, "5") + ` ]}`,
		`{"Holders":[` + h(tok, "5 ") + `]}`,
		`{"Holders":[` + h(tok, "5") + `],"Holders":[]}`,
		`{"Holders":[` + h(tok, "5") + `],"Holders":null}`,
		`{"Holders":[` + h(tok, "5") + `],"holders":[` + h(tok2, "6") + `]}`,
		`{"Holders":[` + h(tok, "5") + `,` + h(tok2, "6") + `],"HOLDERS":[` + h(tok2, "7") + `]}`,
		`{"Holders":[` + h(tok, "5"),
		`{"Holders":[` + h(tok, "5") + `]`,
		`{"Holders":[` + h(tok, "5") + `]} x`,
		`{"Holders":[` + h(tok, "5") + `]}  `,
		`{"Ended":null}`, `{"Ended":[]}`, `{"Ended":["a","<\u2028>"]}`, `{"Ended":[null]}`,
		`{"Seeded":null}`, `{"Seeded":{}}`, `{"Seeded":{"a":1,"a":2}}`, `{"Seeded":{"a":1e3}}`,
		`{"Pool":null}`, `{"Pool":{"ID":"p","Slots":2,"CreatedAt":"2026-01-02T03:04:05.123456789+05:30","UpdatedAt":"0001-01-01T00:00:00Z"}}`,
		`{"Key":5}`, `{"Key":null,"Pool":{},"Holders":null,"Seeded":null}`,
		"{\"Holders\":[{\"t\":\"" + tok + "\",\"l\":5}]}\xff",
		"{\"Ended\":[\"\xff\"]}",
		// as PostgreSQL's jsonb column gives a record back
		`{"Key": "job/j", "Pool": {"ID": "", "Slots": 0, "CreatedAt": "0001-01-01T00:00:00Z", "UpdatedAt": "0001-01-01T00:00:00Z", "Description": ""}, "Seeded": {"j": 3}, "Holders": [{"l": 5, "t": "` + tok + `"}, {"l": 6, "t": "` + tok2 + `"}]}`,
	}
	for _, in := range inputs {
		checkDecodeLikeJSON(t, []byte(in))
	}
}

func TestSlotCodecEncodesLikeJSON(t *testing.T) {
	lease := time.UnixMicro(1_700_000_000_123_456).UTC()
	tok := NewToken("j", "out", "2026-01-02", 7)
	odd := []string{"", "a\"b", "a}b", "<&>", "\u2028\u2029", "\xff\xfe", "tab\t", "\x00", "é", `\`}
	var recs []Slots
	for _, o := range odd {
		recs = append(recs,
			Slots{Key: o},
			Slots{Key: "k", Pool: Pool{ID: o, Description: o, Slots: -1}},
			Slots{Key: "k", Holders: []SlotHolder{{Token: tok, LeaseExpiresAt: lease}, {Token: o, LeaseExpiresAt: lease}}},
			Slots{Key: "k", Ended: []string{tok, o}},
			Slots{Key: "k", Seeded: map[string]int64{o: 1, "b": -2}},
		)
	}
	loc := time.FixedZone("x", 5*3600+1800)
	now := time.Now()
	recs = append(recs,
		Slots{}, Slots{Holders: []SlotHolder{}, Ended: []string{}, Seeded: map[string]int64{}},
		Slots{Holders: []SlotHolder{{Token: tok}}},                                                // zero lease
		Slots{Holders: []SlotHolder{{Token: tok, LeaseExpiresAt: now}}},                           // monotonic reading
		Slots{Holders: []SlotHolder{{Token: tok, LeaseExpiresAt: time.Unix(1<<40, 999).In(loc)}}}, // huge, zoned
		Slots{Pool: Pool{CreatedAt: now, UpdatedAt: now.In(loc)}},
		Slots{Pool: Pool{CreatedAt: time.Time{}.In(loc)}},
		Slots{Pool: Pool{CreatedAt: time.Date(2026, 1, 2, 3, 4, 5, 6, time.FixedZone("s", 3600+7))}},
		Slots{Key: strings.Repeat("a", 1<<12), Holders: []SlotHolder{{Token: tok}, {Token: tok}}},
	)
	for _, s := range recs {
		checkEncodeLikeJSON(t, s)
	}
}

// json.Marshal fails for a time outside years 0-9999 (or a zone 24h off or more); marshalSlots must
// fail too, not write a record that does not parse.
func TestSlotCodecEncodeFailsLikeJSON(t *testing.T) {
	far := time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC)
	t.Run("year", func(t *testing.T) {
		checkEncodeLikeJSON(t, Slots{Key: "pool/p", Pool: Pool{ID: "p", Slots: 1, CreatedAt: far, UpdatedAt: far}})
	})
	odd := time.Date(2026, 1, 2, 0, 0, 0, 0, time.FixedZone("x", 25*3600)) // zone hour out of range
	t.Run("zone", func(t *testing.T) {
		checkEncodeLikeJSON(t, Slots{Key: "pool/p", Pool: Pool{ID: "p", Slots: 1, CreatedAt: odd, UpdatedAt: odd}})
	})
}

func FuzzSlotCodecDecode(f *testing.F) {
	tok := NewToken("j", "out", "2026-01-02", 7)
	f.Add([]byte(`{"Key":"job/j","Pool":{"ID":"","Description":"","Slots":0,"CreatedAt":"0001-01-01T00:00:00Z","UpdatedAt":"0001-01-01T00:00:00Z"},"Holders":[{"t":"` + tok + `","l":1700000000123456}],"Seeded":{"j":3}}`))
	f.Add([]byte(`{"Holders":[{"t":"` + tok + `","l":5},{"t":"` + tok + `","l":-0}],"Ended":["a"]}`))
	f.Add([]byte(`{"Holders":null}`))
	f.Fuzz(func(t *testing.T, raw []byte) {
		checkDecodeLikeJSON(t, raw)
	})
}

func FuzzSlotCodecEncode(f *testing.F) {
	f.Add("job/j", "p", "d", 3, int64(1700000000123456789), 0, "j", "out", "2026-01-02", int64(1700000000123456), "", "j")
	f.Add("<&>", "\u2028", "\xff", -1, int64(-5), 5*3600, "j<&>", "o\"ut", "1", int64(-1), "a\"}", "\x00")
	f.Fuzz(func(t *testing.T, key, pid, desc string, slots int, created int64, zone int, job, dataset, dataid string, lease int64, rawTok, seeded string) {
		loc := time.FixedZone("z", zone%(30*3600))
		ct := time.Unix(0, created).In(loc)
		hs := []SlotHolder{
			{Token: NewToken(job, dataset, dataid, lease), LeaseExpiresAt: time.UnixMicro(lease).UTC()},
			{Token: rawTok, LeaseExpiresAt: time.UnixMicro(lease).In(loc)},
		}
		for _, s := range []Slots{
			{Key: key, Pool: Pool{ID: pid, Description: desc, Slots: slots, CreatedAt: ct, UpdatedAt: ct}, Holders: hs, Ended: []string{rawTok, key}, Seeded: map[string]int64{seeded: lease, key: 1}},
			{Key: key, Holders: hs[:1], Seeded: map[string]int64{}},
		} {
			checkEncodeLikeJSON(t, s)
			raw, err := json.Marshal(s)
			if err == nil {
				checkDecodeLikeJSON(t, raw)
			}
		}
	})
}
