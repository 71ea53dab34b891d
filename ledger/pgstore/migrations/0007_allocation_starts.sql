-- Schema 7: the start of each allocation that starts after it was made,
-- as a column (starts_ns: Unix nanoseconds, as ends_ns) until a change
-- finds it started and sets it to NULL (ActiveAllocations); the index by
-- end lists the others alone, and one by start lists these, so that the
-- hot paths read the allocations active now and never those that start
-- later, however many an account has preset. Run again (a bank whose
-- schema_version was set back), it marks again those not started when
-- they were made, which the next change finds started.
ALTER TABLE allocations ADD COLUMN IF NOT EXISTS starts_ns bigint;
UPDATE allocations SET starts_ns = CASE
	WHEN (doc->>'start')::timestamptz >= '2262-04-11T00:00:00Z' THEN 9223372036854775806
	ELSE (extract(epoch FROM (doc->>'start')::timestamptz) * 1000000)::bigint * 1000
END WHERE doc->>'start' IS NOT NULL AND doc->>'created' IS NOT NULL
	AND (doc->>'created')::timestamptz > '0001-01-01T00:00:00Z'
	AND (doc->>'start')::timestamptz > (doc->>'created')::timestamptz;
DROP INDEX IF EXISTS allocations_by_end;
CREATE INDEX allocations_by_end ON allocations (account, ends_ns, id) WHERE starts_ns IS NULL;
CREATE INDEX IF NOT EXISTS allocations_upcoming ON allocations (account, starts_ns, id) WHERE starts_ns IS NOT NULL;
