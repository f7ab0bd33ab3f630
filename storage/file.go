package storage

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
)

// WriteFileDurable creates p (which must not exist), writes data, fsyncs the
// file and then its directory, so that the file survives a crash once this
// returns.
func WriteFileDurable(p string, data []byte) (err error) {
	dir := filepath.Dir(p)
	if err := MkdirAllDurable(dir); err != nil {
		return err
	}
	f, err := os.OpenFile(p, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return err
	}
	defer func() {
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			_ = os.Remove(p)
		}
	}()
	if _, err = f.Write(data); err != nil {
		return err
	}
	if err = f.Sync(); err != nil {
		return err
	}
	return syncDir(dir)
}

// MkdirAllDurable creates dir and any missing parents, fsyncing each parent
// after a child is created in it.
func MkdirAllDurable(dir string) error {
	if fi, err := os.Stat(dir); err == nil {
		if !fi.IsDir() {
			return fmt.Errorf("%s is not a directory", dir)
		}
		return nil
	}
	parent := filepath.Dir(dir)
	if parent != dir {
		if err := MkdirAllDurable(parent); err != nil {
			return err
		}
	}
	if err := os.Mkdir(dir, 0o755); err != nil && !errors.Is(err, os.ErrExist) {
		return err
	}
	return syncDir(parent)
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}
