package source

import (
	"sync"

	"github.com/twmb/franz-go/pkg/kgo"
)

// recordPool lends franz-go the []kgo.Record slices it decodes each
// fetched record batch into (kgo.PoolRecords, set with kgo.WithPools).
// Without it every batch gets a fresh slice: a Record is about 200 bytes,
// eight times the flights rows' 24-byte values, and these slices were
// the largest allocation of tarn serve's ingest (bench/RESULTS.md). A
// slice comes back once every record of its batch was Recycled (Poll's
// doc); a batch of which some record is never recycled is simply left to
// the garbage collector.
//
// One pool serves every Source of the process, so that a slice given back
// by one topic's pipeline serves the next fetch of any.
type recordPool struct{ p sync.Pool }

// records is the process's recordPool.
var records = &recordPool{}

// GetRecords returns an empty slice, of capacity n if the pool had none
// that large (franz-go grows it to n either way).
func (rp *recordPool) GetRecords(n int) []kgo.Record {
	if s, ok := rp.p.Get().(*[]kgo.Record); ok && cap(*s) >= n {
		return (*s)[:0]
	}
	return make([]kgo.Record, 0, n)
}

// PutRecords takes back a slice whose records were all recycled (and so
// zeroed by Record.Recycle).
func (rp *recordPool) PutRecords(s []kgo.Record) { rp.p.Put(&s) }
