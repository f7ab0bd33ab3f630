package main

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net"
	"os"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/tarnhq/tarn/catalog"
)

// minLeaseTTL is --lease-ttl's floor: renewals run every third of it,
// and one round trip to PostgreSQL must fit in that.
const minLeaseTTL = time.Second

// replicaID is --replica-id, or host:port of the bound listener (the
// host name, and the port clients reach this replica on) when empty.
func replicaID(flag string, l net.Listener) string {
	if flag != "" {
		return flag
	}
	host, err := os.Hostname()
	if err != nil || host == "" {
		host = "localhost"
	}
	_, port, err := net.SplitHostPort(l.Addr().String())
	if err != nil {
		return host
	}
	return net.JoinHostPort(host, port)
}

// leaseHolder is the name this process holds leases under: the replica
// id and a random suffix per start, so that a replica restarted with
// the same id after a kill never takes its dead predecessor's lease for
// its own (the epoch then grows: the new holder is another one).
func leaseHolder(id string) string {
	b := make([]byte, 4)
	_, _ = rand.Read(b)
	return id + "/" + hex.EncodeToString(b)
}

// storeLeases is the store's Leases (catalog/postgres: shared by the
// replicas), or catalog.LocalLeases for a store only this process opens
// (bolt, whose file lock keeps other Tarns out).
func storeLeases(store catalogStore) catalog.Leases {
	if l, ok := store.(catalog.Leases); ok {
		return l
	}
	return &catalog.LocalLeases{}
}

// registerReplicaInfo registers tarn_replica_info{replica, store} = 1,
// so that a dashboard tells the replicas apart (and joins their other
// series by instance), and tarn_replica_leases_held.
func registerReplicaInfo(reg prometheus.Registerer, id, store string, k *catalog.LeaseKeeper) error {
	info := prometheus.NewGauge(prometheus.GaugeOpts{Name: "tarn_replica_info",
		Help:        "Always 1; its labels name this replica (--replica-id, default host:port) and its store kind (bolt or postgres).",
		ConstLabels: prometheus.Labels{"replica": id, "store": store}})
	info.Set(1)
	held := prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "tarn_replica_leases_held",
		Help: "Leases this replica holds: tables it maintains, and publishes in progress."}, func() float64 { return float64(k.Held()) })
	for _, c := range []prometheus.Collector{info, held} {
		if err := reg.Register(c); err != nil {
			return fmt.Errorf("register replica metrics: %w", err)
		}
	}
	return nil
}
