-- Schema 3: a finished lien and a charge are kept as a reference to the
-- journal entry that carries them whole (carrier), as a bank file keeps
-- them, rather than as a second copy (doc); a row has one of the two. Rows
-- written before stay as they are.
ALTER TABLE liens ALTER COLUMN doc DROP NOT NULL, ADD COLUMN carrier bigint,
	ADD CONSTRAINT liens_doc_or_carrier CHECK ((doc IS NULL) <> (carrier IS NULL));
ALTER TABLE charges ALTER COLUMN doc DROP NOT NULL, ADD COLUMN carrier bigint,
	ADD CONSTRAINT charges_doc_or_carrier CHECK ((doc IS NULL) <> (carrier IS NULL));
