-- Schema version 1 of catalog/postgres (see postgres.go for the layout).
-- Only pointers live in rows: a table's or view's metadata stays in its
-- metadata file; the row holds that file's location and a version for
-- compare-and-swap. Text keys use the "C" collation so that listings are
-- in byte order, as catalog/bolt's are.

CREATE TABLE tarn_namespaces (
    -- the levels joined by U+001F (levels never hold control characters)
    ns         text COLLATE "C" PRIMARY KEY,
    -- the parent's ns; NULL for a top-level namespace. The foreign key
    -- refuses a child of a missing parent and the drop of a parent.
    parent     text COLLATE "C" REFERENCES tarn_namespaces (ns),
    properties jsonb NOT NULL
);
CREATE INDEX tarn_namespaces_parent ON tarn_namespaces (parent, ns);

CREATE TABLE tarn_pointers (
    -- tables and views share one identifier space: one primary key.
    ns                text COLLATE "C" NOT NULL REFERENCES tarn_namespaces (ns),
    name              text COLLATE "C" NOT NULL,
    kind              smallint NOT NULL CHECK (kind IN (1, 2)),
    metadata_location text NOT NULL,
    version           bigint NOT NULL CHECK (version >= 1),
    -- catalog.Pointer.Locations, normalised and sorted
    locations         text[] NOT NULL DEFAULT '{}',
    PRIMARY KEY (ns, name)
);

-- The location index: every pointer's directories
-- (catalog.PointerLocations), each ending with "/", so the overlap check
-- of a change is a few index range scans.
CREATE TABLE tarn_locations (
    dir  text COLLATE "C" NOT NULL,
    ns   text COLLATE "C" NOT NULL,
    name text COLLATE "C" NOT NULL,
    PRIMARY KEY (dir, ns, name),
    FOREIGN KEY (ns, name) REFERENCES tarn_pointers (ns, name) ON DELETE CASCADE ON UPDATE CASCADE
);
CREATE INDEX tarn_locations_pointer ON tarn_locations (ns, name);

-- Finalised responses of requests that carried an Idempotency-Key.
CREATE TABLE tarn_idempotency (
    key           text PRIMARY KEY,
    fingerprint   text NOT NULL,
    status        integer NOT NULL,
    content_type  text NOT NULL,
    body          bytea,
    expires_at_ms bigint NOT NULL
);
CREATE INDEX tarn_idempotency_expires ON tarn_idempotency (expires_at_ms);

-- Opaque records of packages above the catalog (topic configs, principals, ...).
CREATE TABLE tarn_records (
    collection text COLLATE "C" NOT NULL,
    key        text COLLATE "C" NOT NULL,
    value      bytea NOT NULL,
    PRIMARY KEY (collection, key)
);
