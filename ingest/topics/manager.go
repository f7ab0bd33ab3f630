package topics

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/apache/iceberg-go"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sr"

	"github.com/tarnhq/tarn/catalog"
	"github.com/tarnhq/tarn/ingest/codec"
	"github.com/tarnhq/tarn/ingest/pipeline"
	"github.com/tarnhq/tarn/internal/errclass"
	"github.com/tarnhq/tarn/internal/recovery"
	"github.com/tarnhq/tarn/offsets"
)

// kafkaTimeout bounds each Kafka or registry request a management call
// makes (metadata, offsets, the latest schema), so that an unreachable
// broker answers the API with an error instead of hanging it.
const kafkaTimeout = 15 * time.Second

// Deps are a Manager's connections.
type Deps struct {
	// Catalog and Warehouse hold the topics' tables. Required.
	Catalog   *catalog.Catalog
	Warehouse *catalog.Warehouse
	// Store keeps the topic records (the catalog's store, shared by every
	// replica). Required.
	Store Store
	// Brokers are the Kafka seed brokers; none means ingest is not
	// configured: the manager still loads and owns stored topics' tables,
	// but runs nothing and Enable returns ErrNotConfigured.
	Brokers []string
	// Kafka are extra kgo options (SASL, TLS) for every client.
	Kafka []kgo.Opt
	// Registry is the schema registry client; nil without a registry (only
	// json and raw topics can be enabled then).
	Registry *sr.Client
	// Logger: slog.Default() if nil.
	Logger *slog.Logger
	// Metrics registers the per-topic metrics (metrics.go) and the
	// share of tarn_panics_recovered_total of the manager, its pipelines
	// and their sources; none if nil.
	Metrics prometheus.Registerer
	// Budget bounds the records buffered by all the topics' pipelines
	// together (pipeline.Budget); nil is unlimited.
	Budget *pipeline.Budget
	// SyncInterval is how often the records are read again to take in
	// changes made through other replicas sharing the store (sync.go);
	// DefaultSyncInterval when 0.
	SyncInterval time.Duration
	// Claims, when set (a store shared by several replicas:
	// catalog/postgres), shares each append topic's partitions among the
	// replicas through a Kafka consumer group, with every commit fenced
	// by the partition claims (group.go). nil (catalog/bolt, one
	// process): each pipeline reads every partition of its topic.
	Claims catalog.PartitionClaims
	// Replica names this process in the claims; required with Claims.
	Replica string
}

// Manager is the set of enabled topics and their pipelines. It owns their
// tables in the catalog (catalog.Owners, installed by New). See the
// package doc for the locks.
type Manager struct {
	deps Deps
	log  *slog.Logger
	reg  pipeline.Registry // nil interface when deps.Registry is nil
	kcl  *kgo.Client       // nil when Brokers is empty
	adm  *kadm.Client
	coll *collector
	// panics counts the panics of supervisors, pipelines and sources.
	panics *recovery.Panics

	// ctx is the parent of every supervisor; cancelled by Close.
	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup

	// op serializes the management operations (Enable, Update, Resume,
	// Disable, TableDropped, Start, Close), which take time (Kafka, the
	// registry, the catalog) and must not interleave on one topic. Lock
	// order: op, then mu.
	op sync.Mutex
	// mu guards topics, byTable, closed and every topic's runtime fields;
	// it is held only briefly and never while calling Kafka, the registry
	// or the catalog, so the catalog's Owner checks never wait for an
	// enable.
	mu      sync.RWMutex
	topics  map[string]*topic
	byTable map[string]*topic
	started bool
	closed  bool
	// brokers is the latest probe of the seed brokers (brokers.go).
	brokers BrokerState
}

// New returns a manager over deps and installs it as the catalog's owner
// hook (catalog.Catalog.SetOwners). Call Start to load the stored topics
// and Close to stop them. Errors: a missing dependency, a Kafka client
// that cannot be built, metrics already registered.
func New(deps Deps) (*Manager, error) {
	if deps.Catalog == nil || deps.Warehouse == nil || deps.Store == nil {
		return nil, errors.New("topics: Catalog, Warehouse and Store are required")
	}
	panics, err := recovery.NewPanics(deps.Metrics)
	if err != nil {
		return nil, fmt.Errorf("topics: %w", err)
	}
	m := &Manager{deps: deps, log: deps.Logger, topics: map[string]*topic{}, byTable: map[string]*topic{}, panics: panics}
	if m.log == nil {
		m.log = slog.Default()
	}
	if deps.Registry != nil {
		m.reg = deps.Registry
	}
	if len(deps.Brokers) > 0 {
		cl, err := kgo.NewClient(m.kafkaOpts()...)
		if err != nil {
			return nil, fmt.Errorf("topics: kafka client: %w", err)
		}
		m.kcl, m.adm = cl, kadm.NewClient(cl)
		m.brokers.Brokers = deps.Brokers
	}
	m.ctx, m.cancel = context.WithCancel(context.Background())
	if deps.Metrics != nil {
		m.coll = &collector{m: m}
		if err := deps.Metrics.Register(m.coll); err != nil {
			m.close()
			return nil, fmt.Errorf("topics: register metrics: %w", err)
		}
	}
	deps.Catalog.SetOwners(m)
	return m, nil
}

func (m *Manager) kafkaOpts() []kgo.Opt {
	return append([]kgo.Opt{kgo.SeedBrokers(m.deps.Brokers...), kgo.ClientID("tarn")}, m.deps.Kafka...)
}

// Configured reports whether the manager has a Kafka connection.
func (m *Manager) Configured() bool { return m.kcl != nil }

// Start loads the stored topics and starts a pipeline for every enabled
// one (when Kafka is configured), plus the lag refresher and the record
// sync (sync.go: changes made through other replicas). Errors: the
// store's.
func (m *Manager) Start(ctx context.Context) error {
	m.op.Lock()
	defer m.op.Unlock()
	recs, err := m.loadRecords(ctx)
	if err != nil {
		return err
	}
	m.mu.Lock()
	if m.closed || m.started {
		m.mu.Unlock()
		return ErrClosed
	}
	m.started = true
	m.mu.Unlock()
	for _, r := range recs {
		m.adopt(r)
	}
	m.mu.RLock()
	loaded := maps.Clone(m.topics)
	m.mu.RUnlock()
	for _, name := range slices.Sorted(maps.Keys(loaded)) {
		m.run(ctx, loaded[name])
	}
	if m.kcl != nil {
		m.wg.Go(m.refreshLagLoop)
		m.wg.Go(m.probeBrokersLoop)
	}
	m.wg.Go(m.syncLoop)
	m.log.Info("topics loaded", "topics", len(recs))
	return nil
}

// Close stops every pipeline, each committing what it buffered, and waits
// for them (or for ctx). Ownership stays installed: the records still
// name their tables.
func (m *Manager) Close(ctx context.Context) error {
	m.op.Lock()
	defer m.op.Unlock()
	m.mu.Lock()
	if m.closed {
		m.mu.Unlock()
		return nil
	}
	m.closed = true
	m.mu.Unlock()
	m.cancel()
	done := make(chan struct{})
	go func() { m.wg.Wait(); close(done) }()
	var err error
	select {
	case <-done:
	case <-ctx.Done():
		err = fmt.Errorf("topics: pipelines still stopping: %w", ctx.Err())
	}
	m.close()
	return err
}

func (m *Manager) close() {
	m.cancel()
	if m.coll != nil {
		m.deps.Metrics.Unregister(m.coll)
	}
	if m.kcl != nil {
		m.kcl.Close()
	}
}

// Enable validates cfg, checks the Kafka topic, resolves its format and
// columns and its start offsets, creates the table (and namespace), stores
// the record and starts the pipeline. A disabled topic enabled again with
// the same table resumes into it (its stored start offsets and partition
// spec kept).
//
// Errors: ErrInvalid (bad input, a schema that cannot be mapped, a
// partition field that does not apply); ErrNoSuchKafkaTopic;
// ErrAlreadyEnabled; ErrTableTaken; ErrUpstream (Kafka or the registry
// failed); ErrNotConfigured; the catalog's.
func (m *Manager) Enable(ctx context.Context, in TopicConfig) (Status, error) {
	cfg, pcfg, err := in.resolve()
	if err != nil {
		return Status{}, err
	}
	m.op.Lock()
	defer m.op.Unlock()
	if err := m.usable(); err != nil {
		return Status{}, err
	}
	m.mu.RLock()
	existing := m.topics[cfg.Topic]
	other := m.byTable[identKey(pcfg.Table)]
	m.mu.RUnlock()
	reenable := false
	switch {
	case existing != nil && !existing.rec.Disabled:
		// Not naming the table: it may be in a namespace the caller
		// cannot see (GET the topic, with manage on it, to learn it).
		return Status{}, errclass.Errorf(ErrAlreadyEnabled, "topic %s is already enabled", cfg.Topic)
	case existing != nil && !existing.ident.Equal(pcfg.Table):
		return Status{}, errclass.Errorf(ErrAlreadyEnabled, "topic %s is disabled with table %s; enable it with that table, or release it first (DELETE /management/v1/topics/%s?release=true)",
			cfg.Topic, existing.rec.Config.Table, cfg.Topic)
	case existing != nil:
		reenable = true
	case other != nil:
		return Status{}, errclass.Errorf(ErrTableTaken, "table %s is materialized from topic %s", cfg.Table, other.rec.Config.Topic)
	}
	if m.kcl == nil {
		return Status{}, ErrNotConfigured
	}

	kctx, cancel := context.WithTimeout(ctx, kafkaTimeout)
	defer cancel()
	cluster, err := m.describe(kctx, cfg.Topic)
	if err != nil {
		return Status{}, err
	}
	if !reenable {
		exists, err := m.deps.Catalog.TableExists(ctx, pcfg.Table)
		if err != nil {
			return Status{}, err
		}
		if exists {
			return Status{}, errclass.Errorf(ErrTableTaken, "table %s already exists and is not materialized by Tarn; choose another table", cfg.Table)
		}
	}
	if err := m.checkDLQFree(ctx, cfg.Topic, pcfg.Table, !reenable); err != nil {
		return Status{}, err
	}
	pcfg.Cluster = cluster
	user, format, err := writerSchema(kctx, m.reg, pcfg)
	if err != nil {
		return Status{}, err
	}
	pcfg.Format, cfg.Format = format, string(format)

	rec := record{Config: cfg, Cluster: cluster, EnabledAt: time.Now().UTC()}
	if reenable {
		rec.StartOffsets = existing.rec.StartOffsets
		rec.BadSchemaIDs = existing.rec.BadSchemaIDs
		rec.Config.PartitionSpec = existing.rec.Config.PartitionSpec
		rec.Config.Start = existing.rec.Config.Start
	} else if rec.StartOffsets, err = m.startOffsets(kctx, cfg.Topic, cfg.Start); err != nil {
		return Status{}, err
	}

	// Own the table before it exists, so that no external write slips in
	// between its creation and the record.
	t := &topic{rec: rec, ident: pcfg.Table}
	if reenable {
		t = existing
	} else {
		m.mu.Lock()
		m.topics[cfg.Topic] = t
		m.byTable[identKey(t.ident)] = t
		m.mu.Unlock()
	}
	// The table's name is the topic's from here on (Owner): the create
	// says it is the topic's own.
	created, err := pipeline.EnsureTable(catalog.OwnerContext(ctx, cfg.Topic), m.deps.Catalog, m.deps.Warehouse, pcfg, user)
	if err == nil && cfg.Delta != nil {
		err = m.setDelta(ctx, pcfg.Table, *cfg.Delta)
	}
	if err == nil {
		err = m.putRecord(ctx, rec)
	}
	if err != nil {
		if !reenable {
			m.forget(t)
			if created {
				if derr := m.deps.Catalog.DropTable(context.WithoutCancel(ctx), m.deps.Warehouse, t.ident, true); derr != nil {
					m.log.Error("drop the table of a failed enable", "table", cfg.Table, "err", derr)
				}
			}
		}
		return Status{}, enableError(err)
	}
	m.mu.Lock()
	t.rec = rec
	t.startErr = ""
	m.mu.Unlock()
	m.startLocked(t)
	m.log.Info("topic enabled", "topic", cfg.Topic, "table", cfg.Table, "format", cfg.Format, "start", cfg.Start,
		"start_offsets", rec.StartOffsets, "table_created", created)
	return m.status(ctx, t), nil
}

// checkDLQFree refuses (ErrDLQTaken) a dead letter table name of table
// that holds a table which is not topic's own dead letter table, before
// topic is enabled (or switched to error mode dlq): the pipeline would
// otherwise write into it, and its offsets (tarn.kafka.offsets, of
// another incarnation of the topic) would make the pipeline drop bad
// records as already written, so that they end up in neither table.
//
// fresh is an enable of a topic without a record: every existing table
// of that name predates the topic (or is left from a forgotten one, e.g.
// after the topic's table was dropped), so it is never the topic's. A
// topic with a record has reserved the name since it was enabled (see
// catalog.Owners), so a dead letter table there is its own, unless it
// was made before names were reserved; one without the dead letter
// columns is refused then.
func (m *Manager) checkDLQFree(ctx context.Context, topic string, table catalog.Ident, fresh bool) error {
	dlq := pipeline.DLQTable(table)
	tbl, err := m.deps.Catalog.TableIO(m.deps.Warehouse).LoadTable(ctx, append(append([]string{}, dlq.Namespace...), dlq.Name))
	switch {
	case errors.Is(err, catalog.ErrNoSuchTable):
		return nil
	case err != nil:
		return err
	case !fresh && isDLQShaped(tbl.Schema()):
		return nil
	}
	return errclass.Errorf(ErrDLQTaken,
		"table %s already exists and is not the dead letter table of topic %s (Tarn would write the topic's bad records into it); drop it or rename it, then try again",
		catalog.FormatIdent(dlq), topic)
}

// isDLQShaped reports whether sc has the columns of a dead letter table.
func isDLQShaped(sc *iceberg.Schema) bool {
	for _, f := range pipeline.DLQTableSchema().Fields() {
		got, ok := sc.FindFieldByName(f.Name)
		if !ok || !got.Type.Equals(f.Type) {
			return false
		}
	}
	return true
}

// tableHead returns the next offset per partition of table id's head
// (offsets.Read of tarn.kafka.offsets); empty for a table without
// offsets yet. Errors: loading the table, malformed offsets.
func (m *Manager) tableHead(ctx context.Context, id catalog.Ident) (map[int32]int64, error) {
	tbl, err := m.deps.Catalog.TableIO(m.deps.Warehouse).LoadTable(ctx, append(append([]string{}, id.Namespace...), id.Name))
	if err != nil {
		return nil, err
	}
	o, found, err := offsets.Read(tbl.Metadata())
	if err != nil || !found {
		return map[int32]int64{}, err
	}
	return o.Next, nil
}

// writerSchema is pipeline.WriterSchema with its errors classified.
func writerSchema(ctx context.Context, reg pipeline.Registry, pcfg pipeline.Config) (user *iceberg.Schema, format pipeline.Format, err error) {
	sc, f, err := pipeline.WriterSchema(ctx, reg, pcfg)
	switch {
	case err == nil:
		return sc, f, nil
	case errors.Is(err, pipeline.ErrInvalidConfig), errors.Is(err, pipeline.ErrNoSchema), errors.Is(err, codec.ErrUnsupported):
		return nil, "", errclass.Errorf(ErrInvalid, "%v", err)
	}
	return nil, "", fmt.Errorf("%w: %w", ErrUpstream, err)
}

// enableError classifies an error of EnsureTable or the store.
func enableError(err error) error {
	if errors.Is(err, pipeline.ErrInvalidConfig) || errors.Is(err, pipeline.ErrTableShape) {
		return errclass.Errorf(ErrInvalid, "%v", err)
	}
	return err
}

// describe checks that topic exists and returns the cluster id.
func (m *Manager) describe(ctx context.Context, topic string) (string, error) {
	md, err := m.adm.Metadata(ctx, topic)
	if err != nil {
		return "", fmt.Errorf("%w: kafka metadata: %w", ErrUpstream, err)
	}
	td, ok := md.Topics[topic]
	switch {
	case !ok, errors.Is(td.Err, kerr.UnknownTopicOrPartition):
		return "", errclass.Errorf(ErrNoSuchKafkaTopic, "Kafka topic %s does not exist", topic)
	case td.Err != nil:
		return "", fmt.Errorf("%w: kafka topic %s: %w", ErrUpstream, topic, td.Err)
	case len(td.Partitions) == 0:
		return "", errclass.Errorf(ErrNoSuchKafkaTopic, "Kafka topic %s has no partitions", topic)
	}
	cluster := md.Cluster
	if cluster == "" {
		// Brokers older than Kafka 0.10.1 have no cluster id; the seed
		// brokers then stand for the cluster.
		cluster = strings.Join(m.deps.Brokers, ",")
	}
	return cluster, nil
}

// startOffsets resolves start (earliest or latest) to per-partition
// offsets.
func (m *Manager) startOffsets(ctx context.Context, topic, start string) (map[int32]int64, error) {
	list := m.adm.ListStartOffsets
	if start == StartLatest {
		list = m.adm.ListEndOffsets
	}
	listed, err := list(ctx, topic)
	if err == nil {
		err = listed.Error()
	}
	if err != nil {
		return nil, fmt.Errorf("%w: list %s offsets of %s: %w", ErrUpstream, start, topic, err)
	}
	out := map[int32]int64{}
	for p, lo := range listed[topic] {
		out[p] = lo.Offset
	}
	return out, nil
}

// Get returns a topic's status, its lag refreshed from Kafka (within a few
// seconds; on failure the last known lag). Errors: ErrNoSuchTopic.
func (m *Manager) Get(ctx context.Context, topic string) (Status, error) {
	m.mu.RLock()
	t := m.topics[topic]
	m.mu.RUnlock()
	if t == nil {
		return Status{}, errclass.Errorf(ErrNoSuchTopic, "topic %s is not enabled in Tarn", topic)
	}
	return m.status(ctx, t), nil
}

// List returns every topic's status, by topic name.
func (m *Manager) List(ctx context.Context) []Status {
	m.mu.RLock()
	ts := slices.Collect(maps.Values(m.topics))
	m.mu.RUnlock()
	slices.SortFunc(ts, func(a, b *topic) int { return strings.Compare(a.rec.Config.Topic, b.rec.Config.Topic) })
	out := make([]Status, 0, len(ts))
	for _, t := range ts {
		out = append(out, m.status(ctx, t))
	}
	return out
}

func (m *Manager) status(ctx context.Context, t *topic) Status {
	m.refreshLag(ctx, t)
	m.mu.RLock()
	defer m.mu.RUnlock()
	return t.statusLocked()
}

// Update changes a topic's target lag, file size, error mode, partition
// spec or Delta output (the table's tarn.delta.enabled), and restarts its
// pipeline with them (a suspended topic stays
// suspended until Resume; a disabled one stays disabled). A new partition
// spec is a spec evolution of the table (new data files use it; existing
// ones keep theirs). Errors: ErrNoSuchTopic, ErrInvalid, the catalog's.
func (m *Manager) Update(ctx context.Context, topic string, p Patch) (Status, error) {
	if err := p.validate(); err != nil {
		return Status{}, err
	}
	m.op.Lock()
	defer m.op.Unlock()
	if err := m.usable(); err != nil {
		return Status{}, err
	}
	t, err := m.lookup(topic)
	if err != nil {
		return Status{}, err
	}
	cfg := p.apply(t.rec.Config)
	cfg, _, err = cfg.resolve()
	if err != nil {
		return Status{}, err
	}
	if cfg.Mode != t.rec.Config.Mode {
		return Status{}, errclass.Errorf(ErrInvalid, "mode %s: topic %s was enabled in mode %s, which its table's rows were written in; "+
			"to change it, disable the topic and enable it again into a new table", cfg.Mode, topic, t.rec.Config.Mode)
	}
	if cfg.ErrorMode == string(pipeline.ErrorModeDLQ) && t.rec.Config.ErrorMode != cfg.ErrorMode {
		if err := m.checkDLQFree(ctx, topic, t.ident, false); err != nil {
			return Status{}, err
		}
	}
	if p.PartitionSpec != nil && !slices.Equal(cfg.PartitionSpec, t.rec.Config.PartitionSpec) {
		if err := m.evolveSpec(ctx, t.ident, cfg.PartitionSpec); err != nil {
			return Status{}, err
		}
	}
	if p.Delta != nil {
		if err := m.setDelta(ctx, t.ident, *p.Delta); err != nil {
			return Status{}, err
		}
	}
	rec := t.rec
	rec.Config = cfg
	if err := m.putRecord(ctx, rec); err != nil {
		return Status{}, err
	}
	running := m.stopLocked(t)
	m.mu.Lock()
	t.rec = rec
	m.mu.Unlock()
	if running && m.kcl != nil {
		m.startLocked(t)
	}
	m.log.Info("topic updated", "topic", topic, "config", cfg)
	return m.status(ctx, t), nil
}

// Resume restarts a suspended topic: its pipeline reads again from the
// table's head, so the record it stopped at comes first; it proceeds if
// the cause is gone (error mode skip, a fixed schema). Errors:
// ErrNoSuchTopic, ErrNotSuspended, ErrNotConfigured.
func (m *Manager) Resume(ctx context.Context, topic string) (Status, error) {
	m.op.Lock()
	defer m.op.Unlock()
	if err := m.usable(); err != nil {
		return Status{}, err
	}
	t, err := m.lookup(topic)
	if err != nil {
		return Status{}, err
	}
	if m.kcl == nil {
		return Status{}, ErrNotConfigured
	}
	m.mu.RLock()
	st := t.statusLocked()
	m.mu.RUnlock()
	if st.State != StateSuspended {
		return Status{}, errclass.Errorf(ErrNotSuspended, "topic %s is %s, not suspended; only a suspended topic can be resumed", topic, st.State)
	}
	m.stopLocked(t)
	if err := m.passSchema(ctx, t); err != nil {
		return Status{}, err
	}
	m.startLocked(t)
	m.log.Info("topic resumed", "topic", topic)
	return m.status(ctx, t), nil
}

// passSchema records, for a topic suspended for its schema (a
// schema-level kind) in error mode skip or dlq, that the resume moves past
// that schema id: its records become bad records
// (pipeline.Config.BadSchemaIDs). Errors: the store's.
func (m *Manager) passSchema(ctx context.Context, t *topic) error {
	m.mu.RLock()
	se, rec := t.suspended, t.rec
	m.mu.RUnlock()
	schemaLevel := se != nil && (se.Kind == pipeline.KindUnsupportedSchema || se.Kind == pipeline.KindIncompatibleSchema)
	mode := pipeline.ErrorMode(rec.Config.ErrorMode)
	if !schemaLevel || mode == pipeline.ErrorModeSuspend || slices.Contains(rec.BadSchemaIDs, se.SchemaID) {
		return nil
	}
	rec.BadSchemaIDs = append(slices.Clone(rec.BadSchemaIDs), se.SchemaID)
	if err := m.putRecord(ctx, rec); err != nil {
		return err
	}
	m.mu.Lock()
	t.rec = rec
	m.mu.Unlock()
	m.log.Info("resume moves past a schema", "topic", rec.Config.Topic, "schema_id", se.SchemaID, "error_mode", mode)
	return nil
}

// Disable stops a topic's pipeline (it commits what it buffered). Without
// release the record stays, disabled, and the table stays Tarn's and
// read-only; with release the record is deleted and the table becomes an
// ordinary writable table. Errors: ErrNoSuchTopic, the store's.
func (m *Manager) Disable(ctx context.Context, topic string, release bool) error {
	m.op.Lock()
	defer m.op.Unlock()
	if err := m.usable(); err != nil {
		return err
	}
	t, err := m.lookup(topic)
	if err != nil {
		return err
	}
	m.stopLocked(t)
	if release {
		if err := m.deps.Store.DeleteRecord(ctx, collection, topic); err != nil {
			return fmt.Errorf("delete topic %s: %w", topic, err)
		}
		m.forget(t)
		m.log.Info("topic released", "topic", topic, "table", t.rec.Config.Table)
		return nil
	}
	rec := t.rec
	rec.Disabled = true
	if err := m.putRecord(ctx, rec); err != nil {
		return err
	}
	m.mu.Lock()
	t.rec = rec
	m.mu.Unlock()
	m.log.Info("topic disabled", "topic", topic, "table", t.rec.Config.Table)
	return nil
}

// Owner implements catalog.Owners: a topic owns its table and the table's
// dead letter table (pipeline.DLQTable), which its pipeline writes in
// error mode dlq.
func (m *Manager) Owner(id catalog.Ident) (topic string, enabled bool, ok bool) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	t := m.byTable[identKey(id)]
	if base, isDLQ := strings.CutSuffix(id.Name, pipeline.DLQSuffix); t == nil && isDLQ && base != "" {
		t = m.byTable[identKey(catalog.Ident{Namespace: id.Namespace, Name: base})]
	}
	if t == nil {
		return "", false, false
	}
	return t.rec.Config.Topic, !t.rec.Disabled, true
}

// TableDropped implements catalog.Owners: the table of a disabled topic
// was dropped, so its record goes too (a dropped dead letter table leaves
// the topic as it is).
func (m *Manager) TableDropped(ctx context.Context, id catalog.Ident) error {
	m.op.Lock()
	defer m.op.Unlock()
	m.mu.RLock()
	t := m.byTable[identKey(id)]
	m.mu.RUnlock()
	if t == nil {
		return nil
	}
	m.stopLocked(t)
	if err := m.deps.Store.DeleteRecord(ctx, collection, t.rec.Config.Topic); err != nil {
		return err
	}
	m.forget(t)
	m.log.Info("topic forgotten: its table was dropped", "topic", t.rec.Config.Topic, "table", t.rec.Config.Table)
	return nil
}

func (m *Manager) usable() error {
	m.mu.RLock()
	defer m.mu.RUnlock()
	if m.closed {
		return ErrClosed
	}
	return nil
}

func (m *Manager) lookup(topic string) (*topic, error) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	t := m.topics[topic]
	if t == nil {
		return nil, errclass.Errorf(ErrNoSuchTopic, "topic %s is not enabled in Tarn", topic)
	}
	return t, nil
}

// forget removes t from the maps (its table is no longer owned).
func (m *Manager) forget(t *topic) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.topics[t.rec.Config.Topic] == t {
		delete(m.topics, t.rec.Config.Topic)
	}
	if m.byTable[identKey(t.ident)] == t {
		delete(m.byTable, identKey(t.ident))
	}
}

// identKey keys a table identifier unambiguously (levels may hold dots).
func identKey(id catalog.Ident) string {
	return strings.Join(id.Namespace, "\x1f") + "\x00" + id.Name
}
