package maintenance_test

import (
	"maps"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/apache/iceberg-go/table"
	"github.com/stretchr/testify/require"

	"github.com/tarnhq/tarn/maintenance"
	"github.com/tarnhq/tarn/tabledefaults"
)

// Issue 20 item 5. Before: an owned table kept every snapshot of the
// last hour (history.expire.max-snapshot-age-ms), so at a 1 s commit
// cadence metadata.json grew by ~50 KB a minute to 3,600 snapshots, and
// time travel ended an hour back. Now expiry also caps main's snapshots
// (tarn.maintenance.expire.max-snapshots) and the tag job tags the head
// every tarn.maintenance.tags.interval-ms, each tag expiring after
// tarn.maintenance.tags.max-age-ms: the snapshot count, the metadata.json
// size and the metadata.json files stay bounded however many commits
// land, and a tagged snapshot older than the dense history still reads
// back exactly the rows it had. At a compressed scale: a cap of 15, 160
// commits at most one per 150 ms, a maintenance pass (every job, as tarn
// serve runs them) every 10 commits, and from the third pass on a tag at
// most every 300 ms kept five times the first passes' spacing (so that
// tags span several passes on a quiet machine and a loaded one alike).
// The bounds hold at any pace: tags are an interval apart and expire
// after their age, however far apart the passes fall.
func TestStreamingMetadataStaysFlat(t *testing.T) {
	const maxSnaps, every, commits = 15, 10, 160
	tagEvery := 300 * time.Millisecond
	var tagAge time.Duration
	props := maps.Clone(tabledefaults.Properties())
	props[maintenance.MaxSnapshotsProperty] = strconv.Itoa(maxSnaps)
	props[maintenance.TagIntervalProperty] = "0"
	h := newHarness(t, props)
	began := time.Now()

	rowsAt := map[int64]int64{} // snapshot id -> rows of partition 0 at it
	tagsSeen := map[string]bool{}
	var sizes, snaps []int
	var maxGap time.Duration
	lastPass := time.Now()
	for i := 1; i <= commits; i++ {
		slot := time.Now().Add(150 * time.Millisecond)
		h.ingest(1, 5)
		rowsAt[h.load().CurrentSnapshot().SnapshotID] = h.next
		time.Sleep(time.Until(slot))
		if i%every != 0 {
			continue
		}
		require.NoError(t, h.sched.Pass(h.ctx))
		maxGap = max(maxGap, time.Since(lastPass))
		lastPass = time.Now()
		if i == 2*every {
			tagAge = 5 * time.Since(began) / 2
			_, _, err := h.tio.CommitTable(h.ctx, h.ident, nil, []table.Update{table.NewSetPropertiesUpdate(map[string]string{
				maintenance.TagIntervalProperty: strconv.FormatInt(tagEvery.Milliseconds(), 10),
				maintenance.TagMaxAgeProperty:   strconv.FormatInt(tagAge.Milliseconds(), 10)})})
			require.NoError(t, err)
		}
		tbl := h.load()
		md := tbl.Metadata()
		tags := 0
		for name, ref := range md.Refs() {
			if ref.SnapshotRefType != table.TagRef {
				continue
			}
			require.True(t, strings.HasPrefix(name, maintenance.TagPrefix), name)
			require.NotNil(t, ref.MaxRefAgeMs)
			require.Equal(t, tagAge.Milliseconds(), *ref.MaxRefAgeMs, "tag %s", name)
			tagsSeen[name] = true
			tags++
		}
		main := table.AncestorsOf(tbl.CurrentSnapshot().SnapshotID, md.SnapshotByID)
		require.LessOrEqual(t, len(main), maxSnaps+1, "main's history after pass %d (the cap, and the snapshot compaction added since)", i/every)
		require.LessOrEqual(t, tags, int((tagAge+maxGap)/tagEvery)+1, "tags after pass %d", i/every)
		require.LessOrEqual(t, len(md.Snapshots()), len(main)+tags, "only main's history and tagged snapshots are kept")
		st, err := os.Stat(strings.TrimPrefix(tbl.MetadataLocation(), "file://"))
		require.NoError(t, err)
		sizes = append(sizes, int(st.Size()))
		snaps = append(snaps, len(md.Snapshots()))
		n := 0
		for _, f := range h.files("metadata") {
			if strings.HasSuffix(f, ".metadata.json") {
				n++
			}
		}
		require.LessOrEqual(t, n, 11, "metadata.json files: write.metadata.previous-versions-max=10 and the current one")
	}
	t.Logf("per pass: snapshots %v, metadata.json bytes %v; passes at most %v apart, tags kept %v", snaps, sizes, maxGap, tagAge)
	// The size follows the snapshot count, which is bounded: no more per
	// snapshot than at the second pass (the cap reached), beside the
	// schema, spec and properties (4 KB).
	perSnap := sizes[1] / snaps[1]
	for i, sz := range sizes {
		require.LessOrEqual(t, sz, perSnap*snaps[i]+4096, "metadata.json bytes at pass %d", i+1)
	}

	// Tags were made all along and the old ones expired with their
	// snapshots.
	tbl := h.load()
	md := tbl.Metadata()
	live := map[string]int64{}
	for name, ref := range md.Refs() {
		if ref.SnapshotRefType == table.TagRef {
			live[name] = ref.SnapshotID
		}
	}
	require.NotEmpty(t, live)
	require.Less(t, len(live), len(tagsSeen), "expired tags are removed (made: %v)", tagsSeen)

	// Time travel to the oldest live tag, a snapshot older than main's
	// dense history: exactly the rows committed up to it.
	dense := map[int64]bool{}
	for _, s := range table.AncestorsOf(tbl.CurrentSnapshot().SnapshotID, md.SnapshotByID) {
		dense[s.SnapshotID] = true
	}
	oldest := ""
	for name := range live {
		if oldest == "" || name < oldest {
			oldest = name
		}
	}
	snap := md.SnapshotByID(live[oldest])
	require.NotNil(t, snap)
	require.False(t, dense[snap.SnapshotID], "tag %s is beyond main's retained history", oldest)
	require.Equal(t, maintenance.TagName(snap.TimestampMs), oldest)
	want, ok := rowsAt[snap.SnapshotID]
	if !ok { // a compaction's snapshot: the rows of its parent
		want = rowsAt[*snap.ParentSnapshotID]
	}
	require.Positive(t, want)
	require.Less(t, want, h.next)
	h.check(tbl, snap, want)
	h.check(tbl, nil, h.next)
}

// Expiry keeps main's newest tarn.maintenance.expire.max-snapshots even
// when history.expire.max-snapshot-age-ms would keep more, and
// history.expire.min-snapshots-to-keep still wins over the cap.
func TestExpireCapsSnapshotCount(t *testing.T) {
	h := newHarness(t, map[string]string{maintenance.MaxSnapshotsProperty: "5", maintenance.TagIntervalProperty: "0"})
	h.ingest(12, 10)
	r := h.run(maintenance.JobExpire)
	require.Equal(t, 7, r.SnapshotsExpired)
	tbl := h.load()
	require.Len(t, tbl.Metadata().Snapshots(), 5)
	h.check(tbl, nil, h.next)
	require.Equal(t, "nothing to expire", h.run(maintenance.JobExpire).Skipped)

	_, _, err := h.tio.CommitTable(h.ctx, h.ident, nil, []table.Update{table.NewSetPropertiesUpdate(map[string]string{table.MinSnapshotsToKeepKey: "8"})})
	require.NoError(t, err)
	h.ingest(6, 10)
	require.Equal(t, 3, h.run(maintenance.JobExpire).SnapshotsExpired)
	require.Len(t, h.load().Metadata().Snapshots(), 8)
}

// The tag job: a forced run tags the head at once and only once; a pass
// tags only when the newest tarn- tag is an interval older than the
// head; a user's tag is neither counted nor touched; a table Tarn does
// not own gets no tags unless its properties ask.
func TestTagJob(t *testing.T) {
	h := newHarness(t, map[string]string{maintenance.TagIntervalProperty: "60000"})
	require.Equal(t, "no snapshot", h.run(maintenance.JobTag).Skipped)
	h.ingest(1, 10)
	head := h.load().CurrentSnapshot()
	_, _, err := h.tio.CommitTable(h.ctx, h.ident, nil, []table.Update{
		table.NewSetSnapshotRefUpdate("release-1", head.SnapshotID, table.TagRef, 0, 0, 0)})
	require.NoError(t, err)
	r := h.run(maintenance.JobTag)
	require.Equal(t, maintenance.TagName(head.TimestampMs), r.Tag)
	require.Equal(t, "head tagged already", h.run(maintenance.JobTag).Skipped)
	h.ingest(1, 10)
	require.NoError(t, h.sched.Pass(h.ctx))
	tags := 0
	for name, ref := range h.load().Metadata().Refs() {
		if ref.SnapshotRefType == table.TagRef {
			tags++
			require.Contains(t, []string{"release-1", r.Tag}, name, "not due within the interval")
		}
	}
	require.Equal(t, 2, tags)

	require.Equal(t, time.Duration(0), maintenance.PolicyOf(nil, false).TagInterval, "no tags on a table Tarn does not own")
	require.Equal(t, 0, maintenance.PolicyOf(nil, false).MaxSnapshots)
	own := maintenance.PolicyOf(nil, true)
	require.Equal(t, maintenance.DefaultTagInterval, own.TagInterval)
	require.Equal(t, maintenance.DefaultTagMaxAge, own.TagMaxAge)
	require.Equal(t, maintenance.DefaultMaxSnapshots, own.MaxSnapshots)
}

func slicesMax(s []int) int {
	m := 0
	for _, v := range s {
		m = max(m, v)
	}
	return m
}
