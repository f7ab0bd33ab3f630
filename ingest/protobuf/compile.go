package protobuf

import (
	"context"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/bufbuild/protocompile"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/reflect/protoregistry"
)

// rootName is the file name the schema itself is compiled under. A
// Confluent schema has no file name of its own; references never use
// this one, and Compile picks another if they do.
const rootName = "tarn-writer-schema.proto"

// Compile compiles the text of a Protobuf schema as a Confluent-compatible
// registry stores it (one .proto file) into a file descriptor.
//
// refs maps import paths to schema text: the names of the schema's
// references (Confluent "references[].name", e.g. "common/address.proto")
// and, transitively, of theirs. The google/protobuf well-known types
// (timestamp, duration, wrappers, struct, any, empty, ...) resolve without
// refs, from the descriptors compiled into google.golang.org/protobuf; a
// ref under google/protobuf/ that names one of them is ignored, so every
// schema sees the same well-known types.
//
// Comments are kept as source info, so [ToIceberg] can copy leading
// comments to field docs.
//
// Errors wrap ErrUnsupported: a syntax or link error (the first one
// protocompile reports, with file, line and column), or an import that is
// neither in refs nor a standard file. ctx cancels the compilation: when
// it has ended the error wraps ctx.Err() instead, which says nothing
// about the schema.
func Compile(ctx context.Context, schema string, refs map[string]string) (protoreflect.FileDescriptor, error) {
	name := rootName
	for _, taken := refs[name]; taken; _, taken = refs[name] {
		name = "_" + name
	}
	srcs := make(map[string]string, len(refs)+1)
	for path, text := range refs {
		if strings.HasPrefix(path, "google/protobuf/") {
			if _, err := protoregistry.GlobalFiles.FindFileByPath(path); err == nil {
				continue
			}
		}
		srcs[path] = text
	}
	srcs[name] = schema

	c := protocompile.Compiler{
		Resolver: protocompile.WithStandardImports(&protocompile.SourceResolver{
			Accessor: func(path string) (io.ReadCloser, error) {
				text, ok := srcs[path]
				if !ok {
					return nil, fmt.Errorf("%s: %w (not among the schema's references)", path, os.ErrNotExist)
				}
				return io.NopCloser(strings.NewReader(text)), nil
			},
		}),
		SourceInfoMode: protocompile.SourceInfoStandard,
	}
	files, err := c.Compile(ctx, name)
	if err != nil {
		if ctx.Err() != nil {
			// protocompile stopped for ctx (or failed as it ended):
			// not a verdict on the schema, which a caller might cache.
			return nil, fmt.Errorf("protobuf schema: %w", ctx.Err())
		}
		return nil, fmt.Errorf("%w: protobuf schema: %v", ErrUnsupported, err)
	}

	return files[0], nil
}

// MessageByIndexes returns the message a Confluent wire-format payload
// names by its message indexes (the varint list after the schema id, as
// franz-go's sr.ConfluentHeader.DecodeIndex returns it): the first index
// picks a top-level message of fd, each further one a message nested in
// the previous. An empty list means [0], the first top-level message.
//
// Errors wrap ErrMalformed (so ErrBadRecord): an index out of range is a
// record naming a message its schema does not have.
func MessageByIndexes(fd protoreflect.FileDescriptor, indexes []int) (protoreflect.MessageDescriptor, error) {
	if len(indexes) == 0 {
		indexes = []int{0}
	}
	msgs := fd.Messages()
	var md protoreflect.MessageDescriptor
	for depth, i := range indexes {
		if i < 0 || i >= msgs.Len() {
			where := "the schema's top level"
			if md != nil {
				where = string(md.FullName())
			}
			return nil, fmt.Errorf("%w: message index %d (position %d of %v): %s has %d messages",
				ErrMalformed, i, depth, indexes, where, msgs.Len())
		}
		md = msgs.Get(i)
		msgs = md.Messages()
	}

	return md, nil
}
