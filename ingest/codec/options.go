package codec

// Options are what a format's NewDecoder takes besides the schemas; each
// format's NewDecoder accepts ...Option.
type Options struct {
	// CallerColumns name top-level target columns that Append leaves
	// alone: the caller appends exactly one value to each after every
	// Append that returned nil. This is how the pipeline fills the _kafka
	// column (DESIGN.md "Kafka metadata column"). A writer field with one
	// of these names is refused with ErrIncompatible (schemaless JSON
	// ignores such fields).
	CallerColumns []string
	// JSONText (ingest/jsonrow only; see its WithJSONText) names string
	// positions of the target that take any JSON value as text.
	JSONText []string
	// TimestampUnit (ingest/jsonrow only; see its WithTimestampUnit) is
	// the unit of JSON integers in timestamp columns; "" is milliseconds.
	TimestampUnit string
	// FoldNames (ingest/jsonrow only; see its WithCaseInsensitiveNames)
	// matches JSON field names to columns regardless of case.
	FoldNames bool
}

// Option sets one of Options.
type Option func(*Options)

// WithCallerColumns adds to Options.CallerColumns.
func WithCallerColumns(names ...string) Option {
	return func(o *Options) { o.CallerColumns = append(o.CallerColumns, names...) }
}

// Apply returns the Options opts set.
func Apply(opts []Option) Options {
	var o Options
	for _, opt := range opts {
		opt(&o)
	}
	return o
}
