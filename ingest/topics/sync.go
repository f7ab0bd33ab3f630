package topics

import (
	"bytes"
	"context"
	"encoding/json"
	"maps"
	"slices"
	"time"
)

// DefaultSyncInterval is how often a Manager reads the topic records
// again (Deps.SyncInterval): the bound within which a topic enabled,
// updated, disabled or released through another replica sharing the
// store takes effect on this one (its table's ownership, its config,
// its pipeline). The same bound as auth.RefreshInterval; one listing of
// the collection per replica per interval.
const DefaultSyncInterval = 5 * time.Second

// syncLoop calls syncRecords every Deps.SyncInterval until the manager
// closes.
func (m *Manager) syncLoop() {
	every := m.deps.SyncInterval
	if every <= 0 {
		every = DefaultSyncInterval
	}
	tick := time.NewTicker(every)
	defer tick.Stop()
	for {
		select {
		case <-m.ctx.Done():
			return
		case <-tick.C:
		}
		if err := m.syncRecords(m.ctx); err != nil && m.ctx.Err() == nil {
			m.log.Warn("sync topic records", "err", err)
		}
	}
}

// syncRecords makes this replica's topics those of the stored records,
// as if each change written through another replica had been made
// here: a new record is adopted (its table owned, its pipeline started
// when enabled and Kafka is configured, as Start does); a changed one
// replaces the local config and restarts a running pipeline with it
// (as Update does; a suspended topic stays suspended); a disabled one
// stops its pipeline; a record gone (released, table dropped) is
// forgotten. Changes made through this replica are in the records
// already and change nothing. Errors: the store's.
func (m *Manager) syncRecords(ctx context.Context) error {
	m.op.Lock()
	defer m.op.Unlock()
	if err := m.usable(); err != nil {
		return nil
	}
	recs, err := m.loadRecords(ctx)
	if err != nil {
		return err
	}
	stored := make(map[string]record, len(recs))
	for _, r := range recs {
		stored[r.Config.Topic] = r
	}
	m.mu.RLock()
	local := maps.Clone(m.topics)
	m.mu.RUnlock()
	for name, t := range local {
		r, ok := stored[name]
		if ok && r.Config.Table == t.rec.Config.Table {
			continue
		}
		m.stopLocked(t) // released, dropped, or re-enabled into another table
		m.forget(t)
		m.log.Info("topic forgotten: changed through another replica", "topic", name, "table", t.rec.Config.Table)
	}
	m.mu.RLock()
	local = maps.Clone(m.topics)
	m.mu.RUnlock()
	for _, name := range slices.Sorted(maps.Keys(stored)) {
		r := stored[name]
		t := local[name]
		if t == nil {
			if t = m.adopt(r); t != nil {
				m.run(ctx, t)
				m.log.Info("topic adopted: enabled through another replica", "topic", name, "table", r.Config.Table)
			}
			continue
		}
		m.mu.RLock()
		cur := t.rec
		m.mu.RUnlock()
		if sameRecord(cur, r) {
			continue
		}
		running := m.stopLocked(t)
		m.mu.Lock()
		t.rec = r
		m.mu.Unlock()
		if !r.Disabled && m.kcl != nil && (running || cur.Disabled) {
			m.startLocked(t)
		}
		m.log.Info("topic changed through another replica", "topic", name, "config", r.Config, "disabled", r.Disabled)
	}
	return nil
}

// adopt adds a stored record's topic to the maps (its table owned from
// now on) and returns it; nil, logged, for a record whose table does not
// parse.
func (m *Manager) adopt(r record) *topic {
	id, err := ParseTable(r.Config.Table)
	if err != nil {
		m.log.Error("stored topic has an invalid table; ignored", "topic", r.Config.Topic, "err", err)
		return nil
	}
	t := &topic{rec: r, ident: id}
	m.mu.Lock()
	m.topics[r.Config.Topic] = t
	m.byTable[identKey(id)] = t
	m.mu.Unlock()
	return t
}

// run starts an adopted topic's pipeline when it is enabled and Kafka is
// configured, else reads its table's head for the status (m.op held).
func (m *Manager) run(ctx context.Context, t *topic) {
	if !t.rec.Disabled && m.kcl != nil {
		m.startLocked(t)
		return
	}
	head, err := m.tableHead(ctx, t.ident)
	if err != nil {
		m.log.Warn("read the head offsets of a topic's table", "topic", t.rec.Config.Topic, "table", t.rec.Config.Table, "err", err)
		return
	}
	m.mu.Lock()
	t.head = head
	m.mu.Unlock()
}

// sameRecord reports whether two records store the same thing.
func sameRecord(a, b record) bool {
	ja, errA := json.Marshal(a)
	jb, errB := json.Marshal(b)
	return errA == nil && errB == nil && bytes.Equal(ja, jb)
}
