-- Schema 6: the ledger keeps, beside each journaled record, the SHA-256 of
-- its value (records of kind ledger.digest, ledger.RecordDigest), so that
-- the pricing paths check their compiled rate table without reading it. A
-- record written before has none and is compared whole until it is next
-- changed, so nothing is rewritten; this file marks the schema, so that an
-- older ingot, which would change a record without its digest, refuses
-- the bank.
SELECT 1;
