package partition

import "testing"

// BenchmarkZoneHours walks ten years of hourly dataids in a zone with
// daylight saving time, as a missing count or a page scan does: each is a
// window in the zone.
//
//	go test ./backends/partition/ -run '^$' -bench ZoneHours
func BenchmarkZoneHours(b *testing.B) {
	for _, tz := range []string{"UTC", "Europe/Berlin", "America/New_York"} {
		def := Def{Kind: Hourly, Start: "2016-01-01T00", End: "2025-12-31T23", Timezone: tz}
		b.Run(tz, func(b *testing.B) {
			for b.Loop() {
				seq, err := def.Range("", "")
				if err != nil {
					b.Fatal(err)
				}
				n := 0
				for range seq {
					n++
				}
				if n < 87_000 {
					b.Fatal(n)
				}
			}
		})
	}
}
