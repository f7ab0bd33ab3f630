package topics

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/tarnhq/tarn/ingest/pipeline"
)

// BrokerTopic is a topic of the Kafka cluster, as the console's enable
// form offers it (GET /management/v1/kafka/topics).
type BrokerTopic struct {
	Topic      string `json:"topic"`
	Partitions int    `json:"partitions"`
	// Enabled says that Tarn already materializes it.
	Enabled bool `json:"enabled"`
	// Format is what format auto resolves to (pipeline.DetectFormat):
	// the type of the latest schema of the registry subject
	// <topic>-value; empty without a registry or a schema, when
	// FormatNote says why.
	Format     string `json:"format,omitempty"`
	FormatNote string `json:"format-note,omitempty"`
}

// BrokerTopics lists the cluster's topics but its internal ones
// (__consumer_offsets, ...), sorted by name, with the format each would
// be read in. Errors: ErrNotConfigured without brokers; ErrUpstream
// (wrapped) when Kafka does not answer. A registry that fails is noted
// per topic, not an error.
func (m *Manager) BrokerTopics(ctx context.Context) ([]BrokerTopic, error) {
	if m.adm == nil {
		return nil, ErrNotConfigured
	}
	kctx, cancel := context.WithTimeout(ctx, kafkaTimeout)
	defer cancel()
	details, err := m.adm.ListTopics(kctx)
	if err == nil {
		err = details.Error()
	}
	if err != nil {
		return nil, fmt.Errorf("%w: list the topics of Kafka: %w", ErrUpstream, err)
	}
	m.mu.RLock()
	enabled := map[string]bool{}
	for name, t := range m.topics {
		enabled[name] = !t.rec.Disabled
	}
	m.mu.RUnlock()
	var out []BrokerTopic
	for _, d := range details.Sorted() {
		bt := BrokerTopic{Topic: d.Topic, Partitions: len(d.Partitions), Enabled: enabled[d.Topic]}
		if m.reg == nil {
			bt.FormatNote = "no schema registry: pick json, connect-json or raw"
		} else if f, err := pipeline.DetectFormat(kctx, m.reg, d.Topic); err != nil {
			bt.FormatNote = err.Error()
			if errors.Is(err, pipeline.ErrNoSchema) {
				bt.FormatNote = "no schema in the registry (" + pipeline.ValueSubject(d.Topic) + "): pick json, connect-json or raw"
			}
		} else {
			bt.Format = string(f)
		}
		out = append(out, bt)
	}
	return slices.Clip(out), nil
}
