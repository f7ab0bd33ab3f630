// Package sample reads the flights sample committed in the repository,
// testdata/flights-220k.parquet (the first 220,000 rows of vega-datasets'
// flights-3m.parquet, see testdata/README.md), and its known answers in
// testdata/answers.json, for the tests and benchmarks that need more rows
// than the demo's embedded 10,000. A clone carries both, so nothing here
// needs a file outside the repository.
package sample

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/tarnhq/tarn/internal/demo"
	"github.com/tarnhq/tarn/internal/testenv"
)

const (
	// File is the sample's path relative to the repository root.
	File = "testdata/flights-220k.parquet"
	// AnswersFile holds the known answers of File (and of the other
	// testdata files), computed with pyarrow when File was cut.
	AnswersFile = "testdata/answers.json"
	// Rows is the number of rows in File.
	Rows = 220_000
	// Span is how far the sample's dates reach past its first one
	// (2001-01-01 00:01 to 2001-01-14 13:20), rounded up to whole days:
	// Repeat shifts each copy by it, so copies never share a day.
	Span = 14 * 24 * time.Hour
)

// Answers are the known totals of File.
type Answers struct {
	// Totals are those of all Rows rows.
	demo.Totals
	// First200000 are those of the first 200,000 rows, equal to
	// flights-3m.parquet's first_200000 in the dataset's own answers.
	First200000 demo.Totals `json:"first_200000"`
}

// Path is the absolute path of File. Errors: the repository root is not
// at or above the working directory.
func Path() (string, error) {
	root, err := testenv.RepoRoot()
	if err != nil {
		return "", err
	}
	return filepath.Join(root, filepath.FromSlash(File)), nil
}

// Flights returns the first n rows of File (all when n is 0). Errors: n
// above Rows; the file cannot be read.
func Flights(n int) ([]demo.Flight, error) {
	if n > Rows {
		return nil, fmt.Errorf("sample: %d rows asked, %s has %d (see Repeat)", n, File, Rows)
	}
	p, err := Path()
	if err != nil {
		return nil, err
	}
	f, err := os.Open(p)
	if err != nil {
		return nil, fmt.Errorf("sample: %w", err)
	}
	defer f.Close()
	rows, err := demo.ReadFlights(f, n)
	if err != nil {
		return nil, fmt.Errorf("sample: %s: %w", File, err)
	}
	return rows, nil
}

// LoadAnswers reads File's entry of AnswersFile.
func LoadAnswers() (Answers, error) {
	root, err := testenv.RepoRoot()
	if err != nil {
		return Answers{}, err
	}
	b, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(AnswersFile)))
	if err != nil {
		return Answers{}, fmt.Errorf("sample: %w", err)
	}
	var all map[string]json.RawMessage
	if err := json.Unmarshal(b, &all); err != nil {
		return Answers{}, fmt.Errorf("sample: %s: %w", AnswersFile, err)
	}
	var a Answers
	if err := json.Unmarshal(all[filepath.Base(File)], &a); err != nil || a.Rows != Rows || a.First200000.Rows != 200_000 {
		return Answers{}, fmt.Errorf("sample: %s has no complete entry for %s (%+v, %v)", AnswersFile, filepath.Base(File), a, err)
	}
	return a, nil
}

// Repeat returns n rows: rows over and over, copy k with every date
// shifted by k*shift, so a benchmark gets as many rows as it asks for
// from the sample with the dates spread as in the full dataset (about
// 16,000 flights a day) instead of n rows on the sample's 14 days.
// Deterministic; rows must not be empty.
func Repeat(rows []demo.Flight, n int, shift time.Duration) []demo.Flight {
	out := make([]demo.Flight, n)
	for i := range out {
		f := rows[i%len(rows)]
		f.Date += int64(i/len(rows)) * shift.Microseconds()
		out[i] = f
	}
	return out
}
