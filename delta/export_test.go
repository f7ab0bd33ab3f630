package delta

import (
	"context"

	icebergio "github.com/apache/iceberg-go/io"
)

// PutLogFile writes name into the log directory dir (a URI) through
// fsys put-if-absent, exactly as a commit file is written.
func PutLogFile(ctx context.Context, fsys icebergio.IO, dir, name string, data []byte) error {
	s, err := openLogStore(fsys, dir)
	if err != nil {
		return err
	}
	return s.putIfAbsent(ctx, name, data)
}
