-- Schema version 2: claims on the Kafka partitions of topic tables, for
-- several replicas sharing ingest (catalog.PartitionClaims, claims.go).
-- A replica the consumer group assigns a partition claims it here (the
-- epoch goes up by one on every claim); an ingest commit checks, in the
-- transaction that swaps the table's pointer, that its replica still
-- holds the claim at that epoch and that the batch starts at next_offset,
-- and moves next_offset to the batch's end. The table's snapshot
-- property tarn.kafka.offsets stays the record of progress: next_offset
-- moves only with it, in the same transaction.

CREATE TABLE tarn_ingest_claims (
    -- the table's UUID (metadata table-uuid): a table dropped and created
    -- again under the same name starts with no claims
    table_uuid      text COLLATE "C" NOT NULL,
    kafka_partition integer NOT NULL CHECK (kafka_partition >= 0),
    -- the topic, for operators reading the table
    topic           text NOT NULL,
    -- the replica holding the claim (tarn serve's replica id)
    owner           text NOT NULL,
    epoch           bigint NOT NULL CHECK (epoch >= 1),
    next_offset     bigint NOT NULL CHECK (next_offset >= 0),
    claimed_at      timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (table_uuid, kafka_partition)
);
