package main_test

import (
	"encoding/json"
	"net/http"
	"path/filepath"
	"regexp"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tarnhq/tarn/internal/testenv"
	"github.com/tarnhq/tarn/internal/testpg"
)

// maintainedRuns returns how many compaction runs replica base's
// maintenance status shows for crash.t (0 when the table is not there:
// the replica never maintained it).
func maintainedRuns(t *testing.T, base string) int64 {
	t.Helper()
	var st struct {
		Tables []struct {
			Table string `json:"table"`
			Jobs  map[string]struct {
				Runs int64 `json:"runs"`
			} `json:"jobs"`
		} `json:"tables"`
	}
	require.NoError(t, json.Unmarshal(mustCall(t, http.MethodGet, base+"/management/v1/maintenance", nil, http.StatusOK), &st))
	for _, ts := range st.Tables {
		if ts.Table == "crash.t" {
			return ts.Jobs["compact"].Runs
		}
	}
	return 0
}

// TestServeLeaseHandoverE2E (issue 18, item 5): two `tarn serve`
// processes on one PostgreSQL store, each passing over the tables every
// second with a 3 s lease TTL. A table's maintenance runs on exactly
// one of them, pass after pass (the other never runs it), and the
// holder exports tarn_replica_leases_held 1 and its tarn_replica_info.
// After kill -9 of the holder, which releases nothing, the other takes
// the table over once the lease lapsed: within the TTL plus a pass
// interval (and the time the pass takes under load). Needs TARN_E2E=1.
func TestServeLeaseHandoverE2E(t *testing.T) {
	testenv.E2E(t, "a real PostgreSQL (internal/testpg)")
	pg := testpg.StartPostgres(t)
	wh := "file://" + filepath.Join(t.TempDir(), "warehouse")
	env := cleanEnv("TARN_STORE=" + pg.URL)
	const ttl, interval = 3 * time.Second, time.Second
	args := func(id string) []string {
		return []string{"--listen", "127.0.0.1:0", "--data-dir", t.TempDir(), "--warehouse", wh,
			"--maintenance-interval", interval.String(), "--lease-ttl", ttl.String(), "--replica-id", id}
	}
	procs := map[string]*tarnProc{"a": startTarn(t, env, args("a")...), "b": startTarn(t, env, args("b")...)}
	uuid := createCrashTable(t, procs["a"].URL)
	mustCall(t, http.MethodPost, procs["a"].URL+crashTablePath, propertyCommit(uuid, "tarn.maintenance.enabled", "true"), http.StatusOK)

	// One replica takes the table and keeps it: after several passes the
	// other has never run its maintenance.
	require.Eventually(t, func() bool { return maintainedRuns(t, procs["a"].URL)+maintainedRuns(t, procs["b"].URL) >= 5 },
		60*time.Second, 200*time.Millisecond, "nobody maintains the table")
	holder, other := "a", "b"
	if maintainedRuns(t, procs["b"].URL) > 0 {
		holder, other = "b", "a"
	}
	assert.Zero(t, maintainedRuns(t, procs[other].URL), "the table is maintained by one replica only")
	metrics := string(mustCall(t, http.MethodGet, procs[holder].URL+"/metrics", nil, http.StatusOK))
	assert.Regexp(t, regexp.MustCompile(`(?m)^tarn_replica_leases_held 1$`), metrics)
	assert.Regexp(t, regexp.MustCompile(`(?m)^tarn_replica_info\{replica="`+holder+`",store="postgres"\} 1$`), metrics)
	otherMetrics := string(mustCall(t, http.MethodGet, procs[other].URL+"/metrics", nil, http.StatusOK))
	assert.Regexp(t, regexp.MustCompile(`(?m)^tarn_replica_leases_held 0$`), otherMetrics)
	before := maintainedRuns(t, procs[holder].URL)
	time.Sleep(3 * interval) // more passes on both: still the holder's alone
	assert.Greater(t, maintainedRuns(t, procs[holder].URL), before, "the holder keeps maintaining the table")
	assert.Zero(t, maintainedRuns(t, procs[other].URL), "the table is maintained by one replica only")

	// kill -9: the lease is not released; the other replica takes the
	// table over after the TTL.
	procs[holder].kill(t)
	killed := time.Now()
	require.Eventually(t, func() bool { return maintainedRuns(t, procs[other].URL) > 0 }, ttl+interval+30*time.Second,
		100*time.Millisecond, "the other replica never took the table over")
	took := time.Since(killed)
	t.Logf("maintenance of crash.t moved from replica %s to %s %s after kill -9 (lease TTL %s, pass interval %s)", holder, other, took.Round(time.Millisecond), ttl, interval)
	assert.Less(t, took, ttl+2*interval+5*time.Second, "taken over within the TTL and a pass")
	assert.GreaterOrEqual(t, took, ttl-interval, "not before the dead replica's lease lapsed")
}
