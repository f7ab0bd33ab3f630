package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/apache/iceberg-go"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/spf13/cobra"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sr"

	"github.com/tarnhq/tarn/catalog"
	"github.com/tarnhq/tarn/catalog/bolt"
	"github.com/tarnhq/tarn/delta"
	"github.com/tarnhq/tarn/ingest/pipeline"
	"github.com/tarnhq/tarn/ingest/topics"
	"github.com/tarnhq/tarn/maintenance"
	"github.com/tarnhq/tarn/publish"
	"github.com/tarnhq/tarn/server"
	"github.com/tarnhq/tarn/tabledefaults"
)

// Defaults of `tarn serve`.
const (
	// defaultListen is loopback-only: Tarn has no authentication yet, so it
	// must not be reachable from other hosts unless the operator says so.
	defaultListen = "127.0.0.1:8181"
	// defaultDataDir holds the bbolt file and the default warehouse.
	defaultDataDir = "./tarn-data"
	// ingestStopTimeout bounds the wait for the pipelines on shutdown: each
	// commits what it buffered within 30 s (ingest/pipeline), so this
	// leaves room for the slowest.
	ingestStopTimeout = 45 * time.Second
)

type serveConfig struct {
	listen  string
	dataDir string
	// store is "bolt" (the default) or a postgres:// URL (store.go).
	store                  string
	warehouse              string
	logLevel               string
	idempotencyKeyLifetime time.Duration
	shutdownDrain          time.Duration
	kafka                  kafkaConfig
	storage                storageConfig
	ingestMemoryBytes      int64
	// maintenanceInterval between maintenance passes; 0: none (runs on
	// request only).
	maintenanceInterval    time.Duration
	maintenanceConcurrency int
	// deltaCheckpointInterval: versions between Delta checkpoints.
	deltaCheckpointInterval int
	// publish are the catalogs table pointers are pushed to.
	publish publishList
	auth    authConfig
	// replicaID names this replica in metrics, logs and leases (""
	// host:port); leaseTTL is how long its leases outlive it.
	replicaID string
	leaseTTL  time.Duration
}

func newServeCmd() *cobra.Command {
	var cfg serveConfig
	cmd := &cobra.Command{
		Use:   "serve",
		Short: "Serve the Iceberg REST catalog",
		Long: `Serve the Iceberg REST catalog on --listen, keeping catalog state in a
bbolt file in --data-dir (or, with --store postgres://..., in PostgreSQL) and
table files in --warehouse. With --kafka-brokers
it also materializes the topics enabled through the management API
(/management/v1/topics, or tarn topics) into catalog-owned tables.

Every flag can also be set as a TARN_* environment variable (--data-dir is
TARN_DATA_DIR) or as a key of the YAML file named by --config; flags win over
the environment, which wins over the file.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := applyConfig(cmd.Flags()); err != nil {
				return err
			}
			ctx, stop := signal.NotifyContext(cmd.Context(), syscall.SIGINT, syscall.SIGTERM)
			defer stop()
			return serve(ctx, cfg)
		},
	}
	f := cmd.Flags()
	f.String("config", "", "YAML file with the same keys as these flags")
	f.StringVar(&cfg.listen, "listen", defaultListen, "address to serve HTTP on (host:port)")
	f.StringVar(&cfg.dataDir, "data-dir", defaultDataDir, "directory for the catalog database and, by default, the warehouse")
	f.StringVar(&cfg.store, "store", storeBolt, `catalog store: "bolt" (a file in --data-dir) or a postgres://user:password@host:port/database URL`)
	f.StringVar(&cfg.warehouse, "warehouse", "", "warehouse root URI (default file://<data-dir>/warehouse)")
	f.StringVar(&cfg.logLevel, "log-level", "info", "log level: debug, info, warn or error")
	f.DurationVar(&cfg.shutdownDrain, "shutdown-drain", 0, "on SIGTERM, keep serving this long with /readyz 503 so a load balancer stops routing here first (0: close at once)")
	f.DurationVar(&cfg.idempotencyKeyLifetime, "idempotency-key-lifetime", server.DefaultIdempotencyKeyLifetime, "how long Idempotency-Key responses are replayed")
	cfg.kafka.register(f)
	cfg.storage.register(f)
	f.Int64Var(&cfg.ingestMemoryBytes, "ingest-memory-bytes", pipeline.DefaultMemoryBytes, "bytes of records all topics may buffer together before commits are forced early (0: unlimited)")
	f.DurationVar(&cfg.maintenanceInterval, "maintenance-interval", maintenance.DefaultInterval, "time between maintenance passes over the tables (0: only on request)")
	f.IntVar(&cfg.maintenanceConcurrency, "maintenance-concurrency", maintenance.DefaultConcurrency, "tables maintained at the same time")
	f.IntVar(&cfg.deltaCheckpointInterval, "delta-checkpoint-interval", delta.DefaultCheckpointInterval, "Delta log versions between two checkpoints (a table's tarn.delta.checkpoint-interval wins)")
	f.Var(&cfg.publish, "publish", `catalogs to publish tables to: a JSON (or YAML in the config file) list of {"name", "type": "glue", "unity" or "iceberg-rest", "namespaces", "drop", and glue's "region", "endpoint", "catalog-id", "role-arn", unity's "uri", "token", "catalog" (Delta tables only) or iceberg-rest's "uri", "credential", "warehouse", "scope"} (docs/publish.md)`)
	cfg.auth.register(f)
	f.StringVar(&cfg.replicaID, "replica-id", "", "name of this replica in metrics (tarn_replica_info), logs and leases (default host:port)")
	f.DurationVar(&cfg.leaseTTL, "lease-ttl", catalog.DefaultLeaseTTL, "how long a table's maintenance and publishing stay with a replica that stopped renewing its leases (died, or lost the store) before another takes them over")
	return cmd
}

// logLevel parses --log-level: slog's level names, in any case (slog also
// takes an offset, as in debug+2).
func logLevel(level string) (slog.Level, error) {
	var l slog.Level
	if err := l.UnmarshalText([]byte(level)); err != nil {
		return 0, fmt.Errorf("--log-level must be debug, info, warn or error, got %q", level)
	}
	return l, nil
}

func newLogger(level string) (*slog.Logger, error) {
	l, err := logLevel(level)
	if err != nil {
		return nil, err
	}
	return slog.New(slog.NewJSONHandler(os.Stderr, &slog.HandlerOptions{Level: l})), nil
}

// checkListen refuses a --listen that net.Listen would refuse for its
// form, before anything is created: it must be host:port, with a port
// number (0: any free one) or service name; the host may be empty (every
// interface). A bare port is refused rather than guessed: ":18381" binds
// every interface and "127.0.0.1:18381" only this machine, and the error
// offers both.
func checkListen(addr string) error {
	_, port, err := net.SplitHostPort(addr)
	if err != nil || port == "" {
		if _, perr := strconv.ParseUint(addr, 10, 16); perr == nil {
			return fmt.Errorf("--listen %q is not host:port: use 127.0.0.1:%s (this machine only) or :%s (every interface)", addr, addr, addr)
		}
		return fmt.Errorf("--listen %q is not host:port (e.g. 127.0.0.1:8181, or :8181 for every interface)", addr)
	}
	if _, err := net.LookupPort("tcp", port); err != nil {
		return fmt.Errorf("--listen %q: the port must be a number from 0 to 65535, got %q", addr, port)
	}
	return nil
}

// validate refuses settings that would make the server misbehave later;
// it creates nothing.
func (cfg serveConfig) validate() error {
	if err := checkListen(cfg.listen); err != nil {
		return err
	}
	if _, err := logLevel(cfg.logLevel); err != nil {
		return err
	}
	if cfg.idempotencyKeyLifetime < time.Second {
		return fmt.Errorf("--idempotency-key-lifetime must be at least 1s, got %s", cfg.idempotencyKeyLifetime)
	}
	if err := checkStoreSpec(cfg.store); err != nil {
		return err
	}
	if cfg.shutdownDrain < 0 {
		return fmt.Errorf("--shutdown-drain must not be negative, got %s", cfg.shutdownDrain)
	}
	if cfg.ingestMemoryBytes < 0 {
		return fmt.Errorf("--ingest-memory-bytes must not be negative, got %d", cfg.ingestMemoryBytes)
	}
	if err := cfg.maintenanceConfig().Validate(); err != nil {
		return fmt.Errorf("--maintenance-interval, --maintenance-concurrency: %w", err)
	}
	if cfg.leaseTTL != 0 && cfg.leaseTTL < minLeaseTTL { // 0 (tarn demo): the default
		return fmt.Errorf("--lease-ttl must be at least %s, got %s", minLeaseTTL, cfg.leaseTTL)
	}
	if cfg.deltaCheckpointInterval < 0 {
		return fmt.Errorf("--delta-checkpoint-interval must be at least 1 (0: the default, %d), got %d", delta.DefaultCheckpointInterval, cfg.deltaCheckpointInterval)
	}
	if err := cfg.auth.validate(cfg.listen); err != nil {
		return err
	}
	return cfg.kafka.validate()
}

func serve(ctx context.Context, cfg serveConfig) error {
	if err := cfg.validate(); err != nil {
		return err
	}
	opts, err := cfg.kafka.opts()
	if err != nil {
		return err
	}
	reg, err := cfg.kafka.registry()
	if err != nil {
		return err
	}
	c, err := openCatalog(cfg, ingestDeps{Brokers: cfg.kafka.brokerList(), Kafka: opts, Registry: reg})
	if err != nil {
		return err
	}
	defer c.close()
	return c.serve(ctx)
}

// validateTableProperties checks the properties a create or commit sets
// that Tarn's jobs read: maintenance's, publishing's and the Delta
// output's.
func validateTableProperties(props iceberg.Properties) error {
	if err := maintenance.ValidateProperties(props); err != nil {
		return err
	}
	if err := publish.ValidateProperties(props); err != nil {
		return err
	}
	return delta.ValidateProperties(props)
}

// tunablePrefixes are the properties a REST client may still change on
// a table a topic owns (catalog.Config.TunablePrefixes): the owned-table
// defaults', maintenance's and the Delta output's.
func tunablePrefixes() []string {
	return slices.Concat(tabledefaults.TunablePrefixes, maintenance.TunablePrefixes, delta.TunableProperties)
}

// maintenanceConfig is the scheduler's config of the flags.
func (cfg serveConfig) maintenanceConfig() maintenance.Config {
	return maintenance.Config{Interval: cfg.maintenanceInterval, Concurrency: cfg.maintenanceConcurrency,
		Disabled: cfg.maintenanceInterval == 0}
}

// ingestDeps are the Kafka and registry connections of the topic
// manager; no brokers means ingest is off.
type ingestDeps struct {
	Brokers  []string
	Kafka    []kgo.Opt
	Registry *sr.Client
}

// catalogServer is the catalog of `tarn serve` (and `tarn demo`): the
// bbolt store, the warehouse, the catalog service and its HTTP server on
// a bound listener.
type catalogServer struct {
	log     *slog.Logger
	dataDir string
	wh      *catalog.Warehouse
	store   catalogStore
	// storeName is "bolt" or the store's URL without its password.
	storeName string
	cat       *catalog.Catalog
	topics    *topics.Manager
	maint     *maintenance.Scheduler
	delta     *delta.Publisher
	publish   *publish.Publisher
	// replica is --replica-id or its default; leases holds this
	// replica's leases (maintenance and publishing), over the store.
	replica string
	leases  *catalog.LeaseKeeper
	srv     *server.Server
	l       net.Listener
	// authMode and tls are logged at start.
	authMode string
	tls      bool
}

// openCatalog validates cfg, installs its logger as slog's default, opens
// the store under cfg.dataDir, starts the topic manager (which owns the
// stored topics' tables and, with brokers, runs their pipelines) and binds
// cfg.listen. Call close when done.
func openCatalog(cfg serveConfig, ing ingestDeps) (*catalogServer, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	log, err := newLogger(cfg.logLevel)
	if err != nil {
		return nil, err
	}
	slog.SetDefault(log)
	dataDir, err := filepath.Abs(cfg.dataDir)
	if err != nil {
		return nil, err
	}
	whLoc := cfg.warehouse
	if whLoc == "" {
		whLoc = "file://" + filepath.Join(dataDir, "warehouse")
	} else if !strings.Contains(whLoc, "://") {
		abs, err := filepath.Abs(whLoc)
		if err != nil {
			return nil, err
		}
		whLoc = "file://" + abs
	}
	whs, err := cfg.storage.warehouses(whLoc, cfg.warehouse != "")
	if err != nil {
		if cfg.warehouse == "" { // the default warehouse is in the data dir
			return nil, fmt.Errorf("--data-dir %s: %w", cfg.dataDir, err)
		}
		return nil, err
	}
	wh := whs[0] // the default
	// The listener is bound first: the replica's default id names its port.
	l, err := net.Listen("tcp", cfg.listen)
	if err != nil {
		return nil, err
	}
	bound := false
	defer func() {
		if !bound {
			_ = l.Close()
		}
	}()
	store, err := openStore(context.Background(), cfg.store, dataDir)
	if err != nil {
		if isPostgresURL(cfg.store) {
			return nil, err // it names the store's URL
		}
		return nil, dataDirError(cfg.dataDir, err)
	}
	replica := replicaID(cfg.replicaID, l)
	keeper := catalog.NewLeaseKeeper(storeLeases(store), leaseHolder(replica), cfg.leaseTTL, log)
	storeKind := storeBolt
	if isPostgresURL(cfg.store) {
		storeKind = "postgres"
	}
	if err := registerReplicaInfo(prometheus.DefaultRegisterer, replica, storeKind, keeper); err != nil {
		store.Close()
		return nil, err
	}
	// Every package registers its metrics on the default registerer
	// (beside Go's runtime and process collectors), which /metrics serves.
	cat, err := catalog.New(catalog.Config{Store: store, Warehouses: whs, Logger: log, ValidateTableProperties: validateTableProperties,
		TunablePrefixes: tunablePrefixes(), Metrics: prometheus.DefaultRegisterer})
	if err != nil {
		store.Close()
		return nil, err
	}
	// The Delta publisher follows every commit (catalog.CommitObserver)
	// from the start, so none is missed; it publishes once serve runs it.
	pub, err := delta.New(delta.Config{CheckpointInterval: cfg.deltaCheckpointInterval},
		delta.Deps{Tables: delta.CatalogTables(cat), Logger: log, Metrics: prometheus.DefaultRegisterer})
	if err != nil {
		store.Close()
		return nil, err
	}
	cat.AddCommitObserver(pub)
	// The catalog publisher too; it asks the topic manager, made next,
	// which tables topics own (only from its workers, never on a
	// commit's goroutine).
	var mgr *topics.Manager
	pubs, err := newPublisher(cfg, cat, store, log, func(id catalog.Ident) bool { _, _, ok := mgr.Owner(id); return ok }, keeper)
	if err != nil {
		store.Close()
		return nil, err
	}
	cat.AddCommitObserver(pubs)
	// A store several replicas share (PostgreSQL) keeps partition claims:
	// the replicas then share each topic's partitions through a Kafka
	// consumer group. On bbolt one process reads every partition.
	claims, _ := store.(catalog.PartitionClaims)
	mgr, err = topics.New(topics.Deps{Catalog: cat, Warehouse: wh, Store: store, Brokers: ing.Brokers, Kafka: ing.Kafka,
		Registry: ing.Registry, Logger: log, Metrics: prometheus.DefaultRegisterer, Budget: pipeline.NewBudget(cfg.ingestMemoryBytes),
		Claims: claims, Replica: replicaName()})
	if err != nil {
		store.Close()
		return nil, err
	}
	c := &catalogServer{log: log, dataDir: dataDir, wh: wh, store: store, storeName: storeName(cfg.store), cat: cat, topics: mgr, delta: pub, publish: pubs,
		replica: replica, leases: keeper}
	if err := mgr.Start(context.Background()); err != nil {
		c.close()
		return nil, err
	}
	// The manager serves without Kafka too: list, status, PATCH, disable
	// and release need no broker (so a 403 on an owned table can always be
	// followed by a release); enable and resume answer 503.
	var tm server.TopicManager = mgr
	c.maint, err = maintenance.New(cfg.maintenanceConfig(), maintenance.Deps{Catalog: cat, Logger: log,
		Metrics: prometheus.DefaultRegisterer, Owned: func(id catalog.Ident) bool { _, _, ok := mgr.Owner(id); return ok },
		Keep: pub.KeepFiles, Leases: keeper})
	if err != nil {
		c.close()
		return nil, err
	}
	authSvc, err := cfg.auth.service(context.Background(), dataDir, store, os.Stdout)
	if err != nil {
		c.close()
		return nil, err
	}
	c.authMode = cfg.auth.modeName()
	scfg := server.Config{Logger: log, IdempotencyKeyLifetime: cfg.idempotencyKeyLifetime, DrainDelay: cfg.shutdownDrain, Topics: tm,
		Maintenance: c.maint, Formats: pub, Auth: authSvc, PublicMetrics: cfg.auth.publicMetrics,
		Metrics: prometheus.DefaultRegisterer, Gatherer: prometheus.DefaultGatherer}
	if pubs.Configured() {
		scfg.Publish = pubs
	}
	c.srv = server.New(cat, scfg)
	bound, c.l = true, l
	if c.l, err = cfg.auth.listener(c.l); err != nil {
		c.close()
		return nil, err
	}
	c.tls = cfg.auth.tlsCert != ""
	return c, nil
}

// newPublisher builds the catalog publisher of cfg.publish (with no
// targets it publishes nothing). Errors: a target's client cannot be
// configured (the AWS configuration).
func newPublisher(cfg serveConfig, cat *catalog.Catalog, store catalogStore, log *slog.Logger, owned func(catalog.Ident) bool, leases *catalog.LeaseKeeper) (*publish.Publisher, error) {
	var targets []publish.Targeted
	for _, tc := range cfg.publish.targets {
		t, err := publish.NewTarget(context.Background(), tc)
		if err != nil {
			return nil, err
		}
		targets = append(targets, publish.Targeted{Config: tc, Target: t})
		if tc.Type == publish.TypeUnity {
			log.Info("publish: a unity target takes only tables with a Delta view (tarn.delta.enabled=true); the others show as unsupported in `tarn publish status`",
				"target", tc.Name, "uri", tc.URI, "catalog", tc.Catalog)
		}
	}
	return publish.New(targets, publish.Deps{Tables: delta.CatalogTables(cat), Store: store, Owned: owned,
		Logger: log, Metrics: prometheus.DefaultRegisterer, Leases: leases})
}

// dataDirError names --data-dir as the user gave it (not only the derived
// absolute path of the file inside it) in an error of bolt.Open; a data
// dir another Tarn holds says so, with its pid when known.
func dataDirError(given string, err error) error {
	var inUse *bolt.InUseError
	if errors.As(err, &inUse) {
		holder := "another tarn process"
		if inUse.PID > 0 {
			holder += fmt.Sprintf(" (pid %d)", inUse.PID)
		}
		return fmt.Errorf("--data-dir %s is in use by %s: stop it, or give this one another --data-dir", given, holder)
	}
	return fmt.Errorf("--data-dir %s: %w", given, err)
}

// serve logs "tarn serving" with the bound address and serves until ctx
// ends; a cancelled ctx is a clean stop (nil).
func (c *catalogServer) serve(ctx context.Context) error {
	ingest := "off"
	if c.topics.Configured() {
		ingest = "on"
	}
	c.log.Info("tarn serving", "version", buildVersion(), "address", c.l.Addr().String(), "replica", c.replica, "lease_holder", c.leases.Holder(), "data_dir", c.dataDir, "store", c.storeName, "warehouse", c.wh.Location, "ingest", ingest, "auth", c.authMode, "tls", c.tls)
	if c.authMode == authOAuth2 && !c.tls && !isLoopback(c.l.Addr().String()) {
		c.log.Warn("oauth2 without TLS on a non-loopback address: client secrets and tokens cross the network in clear text; serve with --tls-cert/--tls-key or behind a TLS-terminating proxy", "address", c.l.Addr().String())
	}
	// The leases are renewed until maintenance and publishing stopped,
	// then released, so another replica takes their tables over at once.
	lctx, stopLeases := context.WithCancel(context.Background())
	leasesDone := make(chan struct{})
	go func() { defer close(leasesDone); c.leases.Run(lctx) }()
	mctx, stopMaint := context.WithCancel(ctx)
	maintDone := make(chan struct{})
	go func() { defer close(maintDone); c.maint.Run(mctx) }()
	dctx, stopDelta := context.WithCancel(ctx)
	deltaDone := make(chan struct{})
	go func() { defer close(deltaDone); c.delta.Run(dctx) }()
	pctx, stopPublish := context.WithCancel(ctx)
	publishDone := make(chan struct{})
	go func() {
		defer close(publishDone)
		if err := c.publish.Run(pctx); err != nil {
			c.log.Error("publish: not started", "err", err)
		}
	}()
	err := c.srv.Serve(ctx, c.l)
	// Maintenance stops first: a job's commit in flight ends with its
	// context (its files stay orphans), and ingest then commits last.
	// The Delta publisher stops too; whatever ingest commits after it is
	// published on the next start (it catches up from its log).
	stopMaint()
	<-maintDone
	stopDelta()
	<-deltaDone
	stopPublish()
	<-publishDone
	stopLeases()
	<-leasesDone
	c.stopIngest()
	c.log.Info("tarn stopped")
	if errors.Is(err, context.Canceled) {
		return nil
	}
	return err
}

// stopIngest stops the topics' pipelines, each committing what it
// buffered; idempotent.
func (c *catalogServer) stopIngest() {
	ctx, cancel := context.WithTimeout(context.Background(), ingestStopTimeout)
	defer cancel()
	if err := c.topics.Close(ctx); err != nil {
		c.log.Error("stop ingest", "err", err)
	}
}

// close stops ingest and closes the listener (if serve did not) and the
// store.
func (c *catalogServer) close() {
	c.stopIngest()
	if c.l != nil {
		_ = c.l.Close()
	}
	_ = c.store.Close()
}

// replicaName names this process in the partition claims
// (catalog.PartitionClaims): the host name and a random suffix, new on
// every start, so that a restarted replica never passes for the process
// it replaces.
func replicaName() string {
	host, err := os.Hostname()
	if err != nil || host == "" {
		host = "tarn"
	}
	var b [4]byte
	_, _ = rand.Read(b[:])
	return host + "-" + hex.EncodeToString(b[:])
}
