package server

import "testing"

// Regression: If-None-Match of "*" or a list of tags got 200 instead of 304;
// only a single exact tag matched.
func TestNoneMatch(t *testing.T) {
	t.Parallel()
	const etag = `"abc"`
	for _, tt := range []struct {
		name   string
		values []string
		want   bool
	}{
		{"exact", []string{`"abc"`}, true},
		{"weak", []string{`W/"abc"`}, true},
		{"star", []string{`*`}, true},
		{"list", []string{`"x", "abc"`}, true},
		{"several headers", []string{`"x"`, `"abc"`}, true},
		{"other", []string{`"abd"`}, false},
		{"none", nil, false},
		{"unquoted", []string{`abc`}, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if got := noneMatch(tt.values, etag); got != tt.want {
				t.Fatalf("noneMatch(%q) = %v, want %v", tt.values, got, tt.want)
			}
		})
	}
}
