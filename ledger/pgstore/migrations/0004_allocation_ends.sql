-- Schema 4: each allocation's end as a column (ends_ns: Unix nanoseconds,
-- the greatest bigint for no end) and an index by account and end, so
-- that the hot paths read the allocations that have not ended
-- (LiveAllocations) and never those that have, however many an account
-- gathers. An end never changes. The ends of the rows already there are
-- read from their documents: to the microsecond, which is what the ledger
-- stores; LiveAllocations reads a microsecond more than it asks and
-- checks each allocation's own end.
ALTER TABLE allocations ADD COLUMN ends_ns bigint;
UPDATE allocations SET ends_ns = CASE
	WHEN doc->>'end' IS NULL OR (doc->>'end')::timestamptz < '1970-01-01T00:00:00Z' THEN 9223372036854775807
	WHEN (doc->>'end')::timestamptz >= '2262-04-11T00:00:00Z' THEN 9223372036854775806
	ELSE (extract(epoch FROM (doc->>'end')::timestamptz) * 1000000)::bigint * 1000
END;
ALTER TABLE allocations ALTER COLUMN ends_ns SET NOT NULL;
CREATE INDEX allocations_by_end ON allocations (account, ends_ns, id);
