package source_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tarnhq/tarn/ingest/source"
)

func TestConfigValidate(t *testing.T) {
	ok := source.Config{Brokers: []string{"127.0.0.1:9092"}, Topic: "orders"}
	for _, tc := range []struct {
		name   string
		change func(*source.Config)
		want   string // substring of the error; "" for valid
	}{
		{"minimal", func(*source.Config) {}, ""},
		{"refresh set", func(c *source.Config) { c.PartitionRefresh = time.Second }, ""},
		{"no brokers", func(c *source.Config) { c.Brokers = nil }, "no brokers"},
		{"empty broker", func(c *source.Config) { c.Brokers = []string{"a:1", ""} }, "broker 1 is empty"},
		{"no topic", func(c *source.Config) { c.Topic = "" }, "no topic"},
		{"negative refresh", func(c *source.Config) { c.PartitionRefresh = -time.Second }, "negative"},
		{"refresh too short", func(c *source.Config) { c.PartitionRefresh = time.Millisecond }, "below 10ms"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := ok
			tc.change(&c)
			err := c.Validate()
			if tc.want == "" {
				require.NoError(t, err)
				return
			}
			require.ErrorIs(t, err, source.ErrInvalidConfig)
			require.ErrorContains(t, err, tc.want)
		})
	}
}
