package webhook

// RecordKey and LateRecordKey are the keys of a webhook's records, for
// tests.
var (
	RecordKey     = recordKey
	LateRecordKey = lateRecordKey
)
