package bolt

import (
	"fmt"
	"github.com/tarnhq/tarn/internal/errclass"
)

// ErrInUse is returned by Open when another process holds the file's lock
// (bbolt takes an exclusive flock for as long as a process has it open).
var ErrInUse = errclass.New(errclass.Internal, "bolt: the catalog file is in use by another process")

// InUseError is Open's ErrInUse with the file and, where the operating
// system tells (Linux: /proc/locks), the process that holds it.
type InUseError struct {
	// Path is the bbolt file, dir/tarn.db.
	Path string
	// PID of the holder; 0 when unknown.
	PID int
}

func (e *InUseError) Error() string {
	if e.PID > 0 {
		return fmt.Sprintf("bolt: %s is in use by another process (pid %d)", e.Path, e.PID)
	}
	return fmt.Sprintf("bolt: %s is in use by another process", e.Path)
}

// Unwrap makes errors.Is(err, ErrInUse) hold.
func (e *InUseError) Unwrap() error { return ErrInUse }
