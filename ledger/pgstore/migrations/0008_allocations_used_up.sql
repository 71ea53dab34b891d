-- Schema 8: whether an allocation is used up (no amount and no credit
-- limit: ledger.Allocation.UsedUp), as a column each change of it sets;
-- the index by end lists the started ones that are not, one of their own
-- those that are, so that the hot paths never read the allocations used
-- up (ActiveAllocations), however many an account has.
ALTER TABLE allocations ADD COLUMN IF NOT EXISTS used_up boolean NOT NULL DEFAULT false;
UPDATE allocations SET used_up = ((doc->>'amount')::numeric = 0 AND (doc->>'credit_limit')::numeric = 0);
DROP INDEX IF EXISTS allocations_by_end;
CREATE INDEX allocations_by_end ON allocations (account, ends_ns, id) WHERE starts_ns IS NULL AND NOT used_up;
CREATE INDEX IF NOT EXISTS allocations_used_up ON allocations (account, ends_ns, id) WHERE starts_ns IS NULL AND used_up;
