-- chunklock schema, version 16 (14 and 15 may be left to changes made
-- beside this one; the migrations apply in order whatever numbers are
-- missing).
--
-- A dataset's own retention of events (backends.Retention): NULL when it
-- has none (the server's --retain-events applies), else how many seconds
-- its events are kept, 0 for ever.
ALTER TABLE datasets ADD COLUMN retention_events_seconds integer;
