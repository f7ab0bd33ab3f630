package jsonschema

import (
	"fmt"
	"maps"
	"net/url"
	"slices"
	"strings"

	sjs "github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/tarnhq/tarn/ingest/codec"
)

// rootURL is where the compiled schema text lives for the compiler: a
// relative $ref without a $id ("address.json") resolves against it. The
// scheme is Tarn's own, so nothing can mistake it for a fetchable address.
const rootURL = "tarn:///value.schema.json"

// Schema is a compiled JSON Schema with the texts it was compiled from (for
// property order, see [ToIceberg]). It is safe for concurrent use: decoders
// only read it.
type Schema struct {
	root *sjs.Schema
	docs map[string]*onode // by document URL
}

// Compile compiles a registry's JSON Schema text. refs maps reference
// names, as Confluent schema references name them (a URL such as
// "https://example.com/address.schema.json" or a file name such as
// "address.json"), to the referenced schemas' texts; a $ref resolves to
// the reference whose name equals the resolved URL, whose name resolves to
// it against the root, whose "$id" equals it, or, failing those, whose name
// is the URL's only matching trailing path ("address.json" for
// "https://example.com/schemas/address.json").
//
// A schema without "$schema" is read as draft-07, Confluent's default.
// Formats (date-time, date, time, uuid, email, ...) are asserted in every
// draft, so a value [ToIceberg] maps to a typed column must have its format
// to pass validation. Nothing is loaded from files or the network: a $ref
// to anything not in refs fails (fail closed: the schema text comes from a
// registry Tarn does not control).
//
// Errors wrap codec.ErrUnsupported: bad JSON, an invalid schema, an
// unresolvable $ref.
func Compile(schema string, refs map[string]string) (*Schema, error) {
	s := &Schema{docs: map[string]*onode{}}
	doc, err := sjs.UnmarshalJSON(strings.NewReader(schema))
	if err != nil {
		return nil, unsupported("", "schema is not JSON: %v", err)
	}
	if s.docs[rootURL], err = parseOrdered(schema); err != nil {
		return nil, unsupported("", "schema is not JSON: %v", err)
	}

	l := &refLoader{s: s}
	for _, name := range slices.Sorted(maps.Keys(refs)) {
		r := ref{name: name, text: refs[name]}
		if r.doc, err = sjs.UnmarshalJSON(strings.NewReader(r.text)); err != nil {
			return nil, unsupported("", "reference %q is not JSON: %v", name, err)
		}
		if m, ok := r.doc.(map[string]any); ok {
			r.id, _ = m["$id"].(string)
		}
		if u, err := url.Parse(name); err == nil {
			r.resolved = mustParse(rootURL).ResolveReference(u).String()
		}
		l.refs = append(l.refs, r)
	}

	c := sjs.NewCompiler()
	c.DefaultDraft(sjs.Draft7)
	c.AssertFormat()
	c.UseLoader(l)
	if err := c.AddResource(rootURL, doc); err != nil {
		return nil, unsupported("", "%s", oneLine(err))
	}
	if s.root, err = c.Compile(rootURL); err != nil {
		return nil, unsupported("", "%s", oneLine(err))
	}

	return s, nil
}

// ref is one schema reference.
type ref struct {
	name     string
	text     string
	doc      any
	id       string // the document's "$id", if any
	resolved string // name resolved against rootURL
}

// refLoader serves $ref documents from a Compile call's refs only.
type refLoader struct {
	s    *Schema
	refs []ref
}

func (l *refLoader) Load(u string) (any, error) {
	r := l.find(u)
	if r == nil {
		return nil, fmt.Errorf("no schema reference for %s (Tarn loads no files or URLs)", u)
	}
	n, err := parseOrdered(r.text)
	if err != nil {
		return nil, err
	}
	l.s.docs[u] = n

	return r.doc, nil
}

func (l *refLoader) find(u string) *ref {
	for _, match := range []func(r *ref) bool{
		func(r *ref) bool { return r.name == u },
		func(r *ref) bool { return r.resolved == u },
		func(r *ref) bool { return r.id != "" && strings.TrimSuffix(r.id, "#") == u },
	} {
		for i := range l.refs {
			if match(&l.refs[i]) {
				return &l.refs[i]
			}
		}
	}
	var found *ref
	for i := range l.refs {
		r := &l.refs[i]
		if strings.HasSuffix(u, "/"+strings.TrimPrefix(r.name, "./")) {
			if found != nil {
				return nil // ambiguous
			}
			found = r
		}
	}

	return found
}

func mustParse(s string) *url.URL {
	u, err := url.Parse(s)
	if err != nil {
		panic(err)
	}

	return u
}

// oneLine joins the lines of the validator's messages (one per failing
// location): one line suits logs, the topic status and the DLQ.
// Validate checks a JSON value, as jsonrow.Parse returns it (numbers as
// json.Number), against the schema. The error is a *codec.FieldError
// wrapping codec.ErrMalformed with the validator's message on one line.
func (s *Schema) Validate(v any) error {
	if err := s.root.Validate(v); err != nil {
		return &codec.FieldError{Err: fmt.Errorf("%w: %s", codec.ErrMalformed, oneLine(err))}
	}

	return nil
}

func oneLine(err error) string { return strings.ReplaceAll(err.Error(), "\n", "; ") }

func unsupported(path string, format string, args ...any) error {
	return codec.FieldErrorf(path, codec.ErrUnsupported, format, args...)
}
