-- Schema 2: new journal entries are written in the ledger's binary layout
-- (ledger/binary.go), not JSON; the entries already there stay as they
-- are. Nothing changes in the tables: the new number makes an ingot that
-- writes schema 1, which reads only JSON entries, refuse the bank rather
-- than fail on its newer entries.
COMMENT ON COLUMN journal.body IS 'the entry''s bytes as hashed: JSON (before schema 2) or the binary layout of ledger/binary.go; never encoded again';
