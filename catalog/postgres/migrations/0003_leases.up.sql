-- Schema version 3 of catalog/postgres: named leases (leases.go), so
-- that a table's maintenance and its publishing to a target run on one
-- replica at a time and move when it dies. (Version 2 is kept for
-- another change of the same release; golang-migrate applies what a
-- database lacks in order.)
CREATE TABLE tarn_leases (
    name       text COLLATE "C" PRIMARY KEY,
    -- the replica holding it (LeaseKeeper's holder: replica id and a
    -- random suffix per process start)
    holder     text NOT NULL,
    -- the fencing token: grows by one with every acquisition by a new
    -- holder (or after a lapse); a renewal keeps it
    epoch      bigint NOT NULL CHECK (epoch >= 1),
    -- by the database's clock
    expires_at timestamptz NOT NULL
);
CREATE INDEX tarn_leases_holder ON tarn_leases (holder);
