package webhook

// RecordKey is the key of a webhook's record, for tests.
var RecordKey = recordKey
