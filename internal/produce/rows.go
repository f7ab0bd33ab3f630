package produce

import (
	"bufio"
	"bytes"
	"context"
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
)

// Row is one input record as JSON values: nil, bool, json.Number,
// string, []any and map[string]any.
type Row = map[string]any

// Rows yields input records in order.
type Rows interface {
	// Next returns the next row, or io.EOF after the last one. Other
	// errors name the input's line (JSON lines, CSV) or row (Parquet).
	Next() (Row, error)
}

// maxLineBytes bounds one JSON line.
const maxLineBytes = 16 << 20

// JSONLines reads one JSON object per line; blank lines are skipped.
// Numbers keep their text (json.Number).
func JSONLines(r io.Reader) Rows {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), maxLineBytes)
	return &jsonLines{sc: sc}
}

type jsonLines struct {
	sc   *bufio.Scanner
	line int
}

func (j *jsonLines) Next() (Row, error) {
	for j.sc.Scan() {
		j.line++
		b := bytes.TrimSpace(j.sc.Bytes())
		if len(b) == 0 {
			continue
		}
		row, err := parseObject(b)
		if err != nil {
			return nil, fmt.Errorf("line %d: %w", j.line, err)
		}
		return row, nil
	}
	if err := j.sc.Err(); err != nil {
		return nil, fmt.Errorf("line %d: %w", j.line+1, err)
	}
	return nil, io.EOF
}

// parseObject decodes one JSON object, numbers as json.Number.
func parseObject(b []byte) (Row, error) {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, fmt.Errorf("not JSON: %w", err)
	}
	if dec.More() {
		return nil, errors.New("not one JSON object: trailing data")
	}
	row, ok := v.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("not a JSON object: %s", truncate(string(b), 60))
	}
	return row, nil
}

// CSV reads a CSV file whose first row names the fields. Every cell is
// a string (see [Coerce] for typing them); an empty cell is a missing
// field (null).
func CSV(r io.Reader) Rows {
	cr := csv.NewReader(r)
	cr.ReuseRecord = false
	return &csvRows{r: cr}
}

type csvRows struct {
	r      *csv.Reader
	header []string
}

func (c *csvRows) Next() (Row, error) {
	if c.header == nil {
		h, err := c.r.Read()
		if errors.Is(err, io.EOF) {
			return nil, io.EOF
		}
		if err != nil {
			return nil, fmt.Errorf("csv header: %w", err)
		}
		for i := range h {
			h[i] = strings.TrimSpace(strings.TrimPrefix(h[i], "\ufeff"))
		}
		c.header = h
	}
	rec, err := c.r.Read()
	if errors.Is(err, io.EOF) {
		return nil, io.EOF
	}
	if err != nil {
		return nil, fmt.Errorf("csv: %w", err) // csv.ParseError names the line
	}
	row := make(Row, len(rec))
	for i, v := range rec {
		if v != "" {
			row[c.header[i]] = v
		}
	}
	return row, nil
}

// Parquet reads a Parquet file through arrow-go, row by row, as the JSON
// arrow-go writes for each value (array.RecordToJSON: timestamps and
// dates as text, structs as objects, lists as arrays, nulls as nulls).
func Parquet(r parquet.ReaderAtSeeker) (Rows, error) {
	pf, err := file.NewParquetReader(r)
	if err != nil {
		return nil, fmt.Errorf("parquet: %w", err)
	}
	fr, err := pqarrow.NewFileReader(pf, pqarrow.ArrowReadProperties{BatchSize: 4096}, memory.DefaultAllocator)
	if err != nil {
		pf.Close()
		return nil, fmt.Errorf("parquet: %w", err)
	}
	rr, err := fr.GetRecordReader(context.Background(), nil, nil)
	if err != nil {
		pf.Close()
		return nil, fmt.Errorf("parquet: %w", err)
	}
	return &parquetRows{pf: pf, rr: rr}, nil
}

type parquetRows struct {
	pf   *file.Reader
	rr   pqarrow.RecordReader
	buf  bytes.Buffer
	rows Rows // the current batch as JSON lines
	n    int
}

func (p *parquetRows) Next() (Row, error) {
	for {
		if p.rows != nil {
			row, err := p.rows.Next()
			if err == nil {
				p.n++
				return row, nil
			}
			if !errors.Is(err, io.EOF) {
				return nil, fmt.Errorf("parquet row %d: %w", p.n+1, err)
			}
			p.rows = nil
		}
		if !p.rr.Next() {
			err := p.rr.Err()
			p.rr.Release()
			p.pf.Close()
			if err != nil && !errors.Is(err, io.EOF) {
				return nil, fmt.Errorf("parquet: %w", err)
			}
			return nil, io.EOF
		}
		p.buf.Reset()
		if err := array.RecordToJSON(p.rr.RecordBatch(), &p.buf); err != nil {
			return nil, fmt.Errorf("parquet row %d: %w", p.n+1, err)
		}
		p.rows = JSONLines(bytes.NewReader(p.buf.Bytes()))
	}
}

// Key returns the record key of row: the value of field as text (a
// string as it is, a number as written, anything else as compact JSON);
// nil when field is "" or the value is null. A row without the field is
// an error.
func Key(row Row, field string) ([]byte, error) {
	if field == "" {
		return nil, nil
	}
	v, ok := row[field]
	if !ok {
		return nil, fmt.Errorf("no key field %q in the record", field)
	}
	switch v := v.(type) {
	case nil:
		return nil, nil
	case string:
		return []byte(v), nil
	case json.Number:
		return []byte(v.String()), nil
	default:
		return json.Marshal(v)
	}
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "..."
}
