package main_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kfake"

	"github.com/tarnhq/tarn/ingest/topics"
	"github.com/tarnhq/tarn/maintenance"
)

// Regression: `--table sales.eu.orders` always meant ["sales", "eu"].orders,
// so `tarn topics enable` and `tarn maintenance run` could not name the
// table orders of namespace ["sales.eu"], and `tarn maintenance status`
// listed both as "sales.eu.orders". --table takes the REST spec's
// TableIdentifier as JSON too, and both commands print each table
// unambiguously (the JSON form when a level or the name holds a dot).
func TestCLIDottedNamespaces(t *testing.T) {
	if testing.Short() {
		t.Skip("starts tarn serve")
	}
	kc, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(1, "orders-plain", "orders-dotted"))
	require.NoError(t, err)
	t.Cleanup(kc.Close)
	p := startTarn(t, cleanEnv(), "--listen", "127.0.0.1:0", "--data-dir", t.TempDir(),
		"--kafka-brokers", strings.Join(kc.ListenAddrs(), ","), "--maintenance-interval", "0")
	env := cleanEnv("TARN_SERVER=" + p.URL)
	const dotted = `{"namespace":["sales.eu"],"name":"orders"}`

	out, errOut, code := runTopics(t, env, "enable", "orders-plain", "--format", "raw", "--table", "sales.eu.orders")
	require.Equal(t, 0, code, "%s%s", out, errOut)
	out, errOut, code = runTopics(t, env, "enable", "orders-dotted", "--format", "raw", "--table", dotted)
	require.Equal(t, 0, code, "%s%s", out, errOut)
	assert.Contains(t, out, dotted)

	out, errOut, code = runTopics(t, env, "list", "-o", "json")
	require.Equal(t, 0, code, errOut)
	var list struct{ Topics []topics.Status }
	require.NoError(t, json.Unmarshal([]byte(out), &list), out)
	tables := map[string]string{}
	for _, st := range list.Topics {
		tables[st.Topic] = st.Table
	}
	assert.Equal(t, map[string]string{"orders-plain": "sales.eu.orders", "orders-dotted": dotted}, tables)

	for _, table := range []string{dotted, "sales.eu.orders"} {
		out, errOut, code = runMaintenance(t, "run", "--server="+p.URL, "--table", table, "--job", "expire")
		require.Equal(t, 0, code, "%s: %s%s", table, out, errOut)
		assert.Contains(t, out, table)
	}
	out, errOut, code = runMaintenance(t, "status", "--server="+p.URL, "-o", "json")
	require.Equal(t, 0, code, errOut)
	var st maintenance.Status
	require.NoError(t, json.Unmarshal([]byte(out), &st), out)
	var names []string
	for _, ts := range st.Tables {
		names = append(names, ts.Table)
	}
	assert.ElementsMatch(t, []string{"sales.eu.orders", dotted}, names)
	out, errOut, code = runMaintenance(t, "status", "--server="+p.URL)
	require.Equal(t, 0, code, errOut)
	assert.Contains(t, out, dotted)

	_, errOut, code = runMaintenance(t, "run", "--server="+p.URL, "--table", `{"namespace":"sales.eu","name":"orders"}`)
	require.Equal(t, 1, code)
	assert.Contains(t, errOut, "not a table identifier")
}
