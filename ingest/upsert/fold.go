package upsert

// Change is one keyed record of a batch, in offset order.
type Change struct {
	// Key is the canonical encoding of the record's decoded key.
	Key string
	// Row is the record's row among the batch's rows (0-based, in
	// batch order), or -1 for a delete (a tombstone: the record has no
	// value).
	Row int
	// Truncate marks a change that empties the table (Debezium's op t,
	// a TRUNCATE of the source table): every row committed before it and
	// every change of the batch before it is gone. Key and Row are
	// unused.
	Truncate bool
}

// Plan is a batch's changes folded per key: the last change of each key
// wins.
type Plan struct {
	// Keep are the batch rows to write, ascending: for each key whose
	// last change is an upsert, the row of that change. Rows replaced
	// later in the batch are not in it, and so are never written.
	Keep []int
	// KeepKeys[i] is the key of row Keep[i].
	KeepKeys []string
	// Deleted are the keys whose last change is a delete, in no
	// particular order.
	Deleted []string
	// Truncate is set when the batch holds a truncate: the committed
	// rows all go, and Keep and Deleted are what the changes after the
	// last truncate leave.
	Truncate bool
	// Upserts, Deletes and Truncates count the batch's changes of each
	// kind, including those superseded inside the batch.
	Upserts, Deletes, Truncates int64
}

// Fold folds changes (in offset order) per key. changes is not modified.
func Fold(changes []Change) Plan {
	last := make(map[string]int, len(changes))
	var p Plan
	from := 0 // the first change after the last truncate
	for i, c := range changes {
		switch {
		case c.Truncate:
			p.Truncates++
			p.Truncate, from = true, i+1
			continue
		case c.Row < 0:
			p.Deletes++
		default:
			p.Upserts++
		}
		last[c.Key] = i
	}
	// Walking changes in order keeps Keep ascending: rows are numbered
	// in offset order too.
	for i, c := range changes[from:] {
		if i += from; c.Truncate || last[c.Key] != i {
			continue
		}
		if c.Row < 0 {
			p.Deleted = append(p.Deleted, c.Key)
		} else {
			p.Keep = append(p.Keep, c.Row)
			p.KeepKeys = append(p.KeepKeys, c.Key)
		}
	}
	return p
}
