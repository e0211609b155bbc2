-- chunklock schema, version 3.
--
-- An OUTPUT row written by the end of a claim records how that claim ended
-- (COMPLETE, FAIL, EXPIRE, RELEASE), so that a runner repeating the call
-- whose answer it lost is told the truth (SPEC §3 "Retries are safe").
-- Empty on every other row. Adding a column with a constant default
-- rewrites nothing.
ALTER TABLE status_rows ADD COLUMN ended text NOT NULL DEFAULT '';
