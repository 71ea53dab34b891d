-- Schema 5: the journal's index (journal_nodes) lists each entry also
-- under its job's term and, for the kinds of a few entries a day, under
-- its kind's (ledger.SearchTerms), so that journal --job and --kind read
-- only what they show. The rows of the entries already there are added by
-- ingot after this file (migrate.go: indexSearchTerms), which decodes
-- each entry's body as SQL cannot; this file marks the schema, so that an
-- older ingot, whose index lacks those rows, refuses the bank.
SELECT 1;
