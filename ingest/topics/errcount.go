package topics

// Bad record counts (Status.Errors, tarn_topic_errors_total) count each
// record once per process, however often it is read. A pipeline counts
// every bad record it takes, and a record not committed yet is read again
// by the next pipeline of the topic (after a failure, a PATCH, a resume)
// or by the same one (after a failed flush re-seeks it to the table's
// head); summing the pipelines' counters counted such a record once per
// reading (a trial showed bad_header 5 for one record, malformed 8 for
// four). Instead the manager counts a bad record only when its offset is
// above the last one it counted for that partition and kind: a partition
// is read in offset order, so a record at or below that mark was read,
// and counted, before.
//
// The pipeline reports each bad record it takes, and the one a
// suspension stops at, through pipeline.Deps.OnBadRecord.

// countBad counts the bad record at partition p, offset o, of kind for t
// unless it was counted before (see above).
func (m *Manager) countBad(t *topic, p int32, o int64, kind string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if t.errMarks == nil {
		t.errMarks = map[errMarkKey]int64{}
		t.errs = map[string]int64{}
	}
	k := errMarkKey{p, kind}
	if last, seen := t.errMarks[k]; seen && o <= last {
		return
	}
	t.errMarks[k] = o
	t.errs[kind]++
}

// errMarkKey keys the last counted offset of a partition and kind.
type errMarkKey struct {
	partition int32
	kind      string
}
