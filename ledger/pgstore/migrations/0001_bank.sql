-- Schema 1 of an ingot bank on PostgreSQL (ledger/pgstore/doc.go says what
-- each table holds). Documents are the ledger's records as JSON, amounts
-- inside them decimal strings; names sort in byte order (COLLATE "C"), as
-- the store contract lists them.

CREATE TABLE schema_version (
	version integer PRIMARY KEY,
	applied timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE settings (
	singleton boolean PRIMARY KEY DEFAULT true CHECK (singleton),
	doc json NOT NULL
);

-- The newest journal entry: the row every writing transaction locks first.
CREATE TABLE journal_head (
	singleton boolean PRIMARY KEY DEFAULT true CHECK (singleton),
	seq bigint NOT NULL CHECK (seq >= 0),
	time timestamptz,
	hash bytea NOT NULL CHECK (length(hash) = 32)
);
INSERT INTO journal_head (seq, hash) VALUES (0, decode(repeat('00', 32), 'hex'));

-- The last id given to an allocation, a lien, a charge.
CREATE TABLE counters (
	name text COLLATE "C" PRIMARY KEY,
	value bigint NOT NULL CHECK (value >= 0)
);
INSERT INTO counters (name, value) VALUES ('allocations', 0), ('liens', 0), ('charges', 0);

CREATE TABLE nodes (
	name text COLLATE "C" PRIMARY KEY,
	doc json NOT NULL
);

CREATE TABLE users (
	name text COLLATE "C" PRIMARY KEY,
	doc json NOT NULL
);

CREATE TABLE machines (
	name text COLLATE "C" PRIMARY KEY,
	doc json NOT NULL
);

CREATE TABLE allocations (
	id bigint PRIMARY KEY,
	account text COLLATE "C" NOT NULL,
	doc json NOT NULL
);
CREATE INDEX allocations_by_account ON allocations (account, id);

-- Each allocation's state after each journal entry that changed it.
CREATE TABLE balance_history (
	allocation bigint,
	seq bigint,
	doc json NOT NULL,
	PRIMARY KEY (allocation, seq)
);

-- The entries' bytes as hashed: never encoded again.
CREATE TABLE journal (
	seq bigint PRIMARY KEY CHECK (seq > 0),
	time timestamptz NOT NULL,
	hash bytea NOT NULL CHECK (length(hash) = 32),
	body bytea NOT NULL
);

-- For each node, the entries that concern it.
CREATE TABLE journal_nodes (
	node text COLLATE "C",
	seq bigint REFERENCES journal (seq),
	PRIMARY KEY (node, seq)
);

-- The answer to each request, for its retries.
CREATE TABLE requests (
	client text COLLATE "C",
	id text COLLATE "C",
	content_hash bytea NOT NULL CHECK (length(content_hash) = 32),
	seq bigint NOT NULL,
	time timestamptz NOT NULL,
	answer bytea NOT NULL,
	PRIMARY KEY (client, id)
);

-- expires_ns is the lien's expiry in Unix nanoseconds, exactly as the
-- ledger gave it; active says its state is active.
CREATE TABLE liens (
	id bigint PRIMARY KEY,
	account text COLLATE "C" NOT NULL,
	machine text COLLATE "C" NOT NULL,
	job text COLLATE "C" NOT NULL,
	active boolean NOT NULL,
	expires_ns bigint NOT NULL,
	doc json NOT NULL
);
CREATE INDEX liens_by_job ON liens (machine, job, id);
CREATE INDEX liens_active ON liens (account, expires_ns, id) WHERE active;

CREATE TABLE charges (
	id bigint PRIMARY KEY,
	machine text COLLATE "C" NOT NULL,
	job text COLLATE "C" NOT NULL,
	doc json NOT NULL
);
CREATE INDEX charges_by_job ON charges (machine, job, id);

-- The ledger's own records (running sums, the audit's checkpoint, rates).
CREATE TABLE records (
	kind text COLLATE "C",
	key text COLLATE "C",
	value bytea NOT NULL,
	PRIMARY KEY (kind, key)
);
