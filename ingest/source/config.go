package source

import (
	"fmt"
	"log/slog"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/tarnhq/tarn/internal/recovery"
)

const (
	// DefaultClientID is the Kafka client.id when Config.ClientID is empty;
	// brokers show it in request logs and quotas.
	DefaultClientID = "tarn"

	// DefaultPartitionRefresh is how often the topic's partition count is
	// re-read when Config.PartitionRefresh is zero. A source consumes the
	// partitions it was assigned (kgo.ConsumePartitions), so a partition
	// added to the topic is read only once a refresh finds it. 10 s is
	// the default freshness target of a topic (target-lag-ms 10000): a
	// new partition's first records are then late by at most about one
	// freshness interval, while the cost is one Metadata and one
	// ListOffsets request per topic every 10 s, negligible for a broker.
	// Kafka's own consumers notice new partitions only on their metadata
	// refresh (metadata.max.age.ms, 5 minutes), far beyond any freshness
	// target Tarn offers. A refresh shorter than franz-go's
	// MetadataMinAge (5 s, settable through Config.Opts) finds new
	// partitions only as fast as the client's cached metadata expires.
	DefaultPartitionRefresh = 10 * time.Second

	// DefaultMissingTopicTimeout is Config.MissingTopicTimeout's default.
	// Fetch errors saying the broker does not know the topic
	// (UNKNOWN_TOPIC_ID, UNKNOWN_TOPIC_OR_PARTITION) are normal for a
	// moment after a topic is created or a partition moves; past 10 s the
	// topic was deleted (or recreated under a new id), and the pipeline
	// should fail with a reason and restart with backoff rather than spin.
	DefaultMissingTopicTimeout = 10 * time.Second

	// fetchWarnEvery limits the log lines of a retried fetch error to one
	// per partition and error in this interval.
	fetchWarnEvery = 10 * time.Second

	// MinPartitionRefresh is the shortest PartitionRefresh Validate accepts,
	// so that a typo cannot turn the refresh into a request storm.
	MinPartitionRefresh = 10 * time.Millisecond
)

// Config is the Kafka side of one topic's pipeline.
type Config struct {
	// Brokers are the seed brokers, host:port. Required.
	Brokers []string
	// Topic is the topic to consume, all partitions of it. Required.
	Topic string
	// ClientID is the Kafka client.id; default DefaultClientID ("tarn").
	ClientID string
	// Opts are extra kgo options (TLS, SASL) appended by the caller after
	// the source's own, so they may override client defaults. They must
	// not set a consumer group, topics or partitions to consume, the
	// isolation level or the reset offset: the source owns those.
	Opts []kgo.Opt
	// PartitionRefresh is how often partitions added to the topic are
	// discovered; default DefaultPartitionRefresh (10 s, see there why),
	// at least MinPartitionRefresh.
	PartitionRefresh time.Duration
	// ControlRecords makes Poll also return control records (transaction
	// commit and abort markers: Attrs.IsControl set, no user key or
	// value), so that the caller can count their offsets as read. Its
	// next offset then passes a transaction's final marker: the table
	// does not re-read it after a restart and Lag reaches 0. Default
	// false: only data records are returned.
	ControlRecords bool
	// MissingTopicTimeout is how long fetches of a partition may fail
	// because the broker does not know the topic before Poll fails with
	// ErrUnknownTopic; default DefaultMissingTopicTimeout.
	MissingTopicTimeout time.Duration
	// Logger receives gaps (always, at error level), fatal and retried
	// fetch errors, partition discovery, and franz-go's own warnings and
	// errors. Default slog.Default().
	Logger *slog.Logger
	// Group, when set, shares the topic's partitions with the other
	// members of a consumer group (see Group); nil reads them all.
	Group *Group
	// Panics counts a panic of the partition refresh
	// (tarn_panics_recovered_total); nil counts none, it is still
	// recovered.
	Panics *recovery.Panics
}

// Validate reports the first missing or out-of-range field. Errors wrap
// ErrInvalidConfig.
func (c Config) Validate() error {
	switch {
	case len(c.Brokers) == 0:
		return fmt.Errorf("%w: no brokers", ErrInvalidConfig)
	case c.Topic == "":
		return fmt.Errorf("%w: no topic", ErrInvalidConfig)
	case c.PartitionRefresh < 0:
		return fmt.Errorf("%w: partition refresh %v is negative", ErrInvalidConfig, c.PartitionRefresh)
	case c.PartitionRefresh != 0 && c.PartitionRefresh < MinPartitionRefresh:
		return fmt.Errorf("%w: partition refresh %v is below %v", ErrInvalidConfig, c.PartitionRefresh, MinPartitionRefresh)
	}
	if g := c.Group; g != nil && (g.ID == "" || g.Claim == nil || g.SessionTimeout < 0) {
		return fmt.Errorf("%w: a group needs an id and a claim function", ErrInvalidConfig)
	}
	for i, b := range c.Brokers {
		if b == "" {
			return fmt.Errorf("%w: broker %d is empty", ErrInvalidConfig, i)
		}
	}
	return nil
}

// withDefaults returns c with zero fields set to their defaults.
func (c Config) withDefaults() Config {
	if c.ClientID == "" {
		c.ClientID = DefaultClientID
	}
	if c.PartitionRefresh == 0 {
		c.PartitionRefresh = DefaultPartitionRefresh
	}
	if c.MissingTopicTimeout <= 0 {
		c.MissingTopicTimeout = DefaultMissingTopicTimeout
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	return c
}
