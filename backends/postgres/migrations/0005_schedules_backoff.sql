-- chunklock schema, version 5: backoff and schedules.
--
-- A FAILED OUTPUT row of a job with a retry delay records when it may be
-- claimed again (null: at once). A findNext candidate may be hidden until
-- a time (a failed chunk's retry time, a scheduled window's due time), and
-- one candidate per scheduled job is its frontier: the lowest expected
-- dataid it has not claimed yet. Hidden candidates keep their place in
-- the queue order; findNext's index scan passes over them, and there are
-- few of them (one frontier per job, one per chunk in backoff). Adding
-- nullable columns, or one with a constant default, rewrites nothing.
ALTER TABLE status_rows ADD COLUMN retry_at timestamptz;
ALTER TABLE candidates ADD COLUMN not_before timestamptz;
ALTER TABLE candidates ADD COLUMN frontier boolean NOT NULL DEFAULT false;
