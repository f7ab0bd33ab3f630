package topics

import (
	"context"
	"strings"
	"time"
)

// The seed brokers are probed (a Metadata request for no topics, kgo's
// Ping) as soon as Start runs and then every brokerProbeInterval, so that
// an unreachable --kafka-brokers is logged at start and shown by /readyz
// instead of surfacing only at the first enable. A probe is bounded by
// brokerProbeTimeout (kgo's dial timeout is 10 s).
const (
	brokerProbeInterval = 15 * time.Second
	brokerProbeTimeout  = 10 * time.Second
)

// BrokerState is what the latest probe of the seed brokers found.
type BrokerState struct {
	// Brokers are the seed brokers probed.
	Brokers []string
	// Checked is false until the first probe has answered.
	Checked bool
	// Err is nil while the brokers answer, else the latest probe's error.
	Err error
	// Since is when the brokers last began answering or stopped.
	Since time.Time
}

// Brokers returns the latest probe's result; Configured must be true for
// it to mean anything (no brokers: nothing is probed).
func (m *Manager) Brokers() BrokerState {
	m.mu.RLock()
	defer m.mu.RUnlock()
	return m.brokers
}

// probeBrokersLoop probes the seed brokers until Close, logging each
// change: an error when they stop answering (or do not at start), info
// when they answer. The catalog serves either way; pipelines retry with
// their own backoff (supervisor.go).
func (m *Manager) probeBrokersLoop() {
	tick := time.NewTicker(brokerProbeInterval)
	defer tick.Stop()
	for {
		m.probeBrokers(m.ctx)
		select {
		case <-m.ctx.Done():
			return
		case <-tick.C:
		}
	}
}

func (m *Manager) probeBrokers(ctx context.Context) {
	pctx, cancel := context.WithTimeout(ctx, brokerProbeTimeout)
	err := m.kcl.Ping(pctx)
	cancel()
	if ctx.Err() != nil {
		return // closing: not the brokers' fault
	}
	m.mu.Lock()
	prev := m.brokers
	changed := !prev.Checked || (prev.Err == nil) != (err == nil)
	m.brokers.Checked, m.brokers.Err = true, err
	if changed {
		m.brokers.Since = time.Now()
	}
	m.mu.Unlock()
	if !changed {
		return
	}
	seeds := strings.Join(m.deps.Brokers, ",")
	if err != nil {
		m.log.Error("kafka brokers unreachable: the catalog serves, topics wait for them (GET /readyz shows the state)",
			"kafka_brokers", seeds, "err", err)
		return
	}
	m.log.Info("kafka brokers reachable", "kafka_brokers", seeds)
}
