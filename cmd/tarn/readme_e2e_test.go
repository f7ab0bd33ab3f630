package main

import (
	"bytes"
	"context"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/tarnhq/tarn/internal/testenv"
)

// walkthroughMarker precedes the README's "Stream your own topic" block.
const walkthroughMarker = "<!-- walkthrough:"

// readmeBlock returns the fenced block that follows marker in README.md.
func readmeBlock(t *testing.T, marker string) string {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(repoRoot, "README.md"))
	require.NoError(t, err)
	_, after, ok := strings.Cut(string(raw), marker)
	require.True(t, ok, "README.md has no %q", marker)
	_, after, ok = strings.Cut(after, "```sh\n")
	require.True(t, ok, "no shell block after %q", marker)
	block, _, ok := strings.Cut(after, "\n```")
	require.True(t, ok, "the block after %q does not end", marker)
	return block
}

// freePort is a TCP port free on loopback right now.
func freePort(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer l.Close()
	_, port, err := net.SplitHostPort(l.Addr().String())
	require.NoError(t, err)
	return port
}

// The README's "Stream your own topic" walkthrough, run as written: the
// block is read from README.md and run by bash from the repository root
// against the broker and registry of scripts/kafka.sh and
// scripts/schema-registry.sh. Only the port differs from a reader's run
// (TARN_LISTEN and TARN_SERVER, so that a Tarn on 8181 does not
// collide). The query at its end must print the 1000 rows produced.
// Runs only with TARN_E2E=1.
func TestE2EReadmeWalkthrough(t *testing.T) {
	testenv.E2E(t, "the README's walkthrough against a real Kafka broker and schema registry")
	block := readmeBlock(t, walkthroughMarker)
	for _, step := range []string{"scripts/kafka.sh start", "scripts/schema-registry.sh start", "tarn topics create orders",
		"tarn produce orders", "tarn topics enable orders", "load_catalog"} {
		require.Contains(t, block, step, "the walkthrough lost a step")
	}
	root, err := filepath.Abs(repoRoot)
	require.NoError(t, err)
	runDir := t.TempDir()
	port := freePort(t)
	env := []string{"TARN_LISTEN=127.0.0.1:" + port, "TARN_SERVER=http://127.0.0.1:" + port, "TARN_RUN_DIR=" + runDir}
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, envPrefix) {
			env = append(env, kv)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "bash", "-e", "-c", block)
	cmd.Dir, cmd.Env = root, env
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true} // tarn serve runs in the block's background
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	t.Cleanup(func() {
		if cmd.Process != nil {
			_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		}
		for _, script := range []string{"scripts/schema-registry.sh", "scripts/kafka.sh"} {
			stop := exec.Command(filepath.Join(root, script), "stop")
			stop.Env = env
			_ = stop.Run() // nothing to stop once the block did
		}
	})
	err = cmd.Run()
	t.Logf("stdout:\n%s", stdout.String())
	require.NoError(t, err, "stderr:\n%s", stderr.String())

	out := stdout.String()
	assert.Contains(t, out, "created topic orders: 3 partitions, replication factor 1\n")
	assert.Regexp(t, `produced 1000 records to orders \(avro, schema id \d+ of subject orders-value\)`, out)
	assert.Regexp(t, `(?m)^state: +(pending|syncing)$`, out, "tarn topics enable prints the status")
	counts := regexp.MustCompile(`(?m)^(\d+)$`).FindAllString(out, -1)
	require.NotEmpty(t, counts, "the query printed no row count")
	assert.Equal(t, "1000", counts[len(counts)-1], "rows of sales.orders")
}
