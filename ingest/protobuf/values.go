package protobuf

import (
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"unicode/utf8"

	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/apache/iceberg-go"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/reflect/protoregistry"
	"google.golang.org/protobuf/types/dynamicpb"

	"github.com/tarnhq/tarn/ingest/codec"
	"github.com/tarnhq/tarn/ingest/internal/tape"
)

// leafKind is one (Protobuf kind → Arrow builder) conversion.
type leafKind uint8

const (
	kBool          leafKind = iota // bool → Boolean
	kInt32                         // int32, sint32, sfixed32 → Int32
	kInt32ToLong                   // the same → Int64 (int → long promotion)
	kInt64                         // int64, sint64, sfixed64 → Int64
	kUint32                        // uint32, fixed32 → Int64
	kUint64                        // uint64, fixed64 → Decimal128, scale 0
	kFloat                         // float → Float32
	kFloatToDouble                 // float → Float64 (float → double promotion)
	kDouble                        // double → Float64
	kString                        // string → String (UTF-8 checked)
	kBytes                         // bytes → Binary
	kEnum                          // enum number → String (the value's name)
)

// writeKinds maps each conversion to the Arrow builder its column has.
var writeKinds = [...]tape.Kind{
	kBool:          tape.Bool,
	kInt32:         tape.Int32,
	kInt32ToLong:   tape.Int64,
	kInt64:         tape.Int64,
	kUint32:        tape.Int64,
	kUint64:        tape.Decimal128,
	kFloat:         tape.Float32,
	kFloatToDouble: tape.Float64,
	kDouble:        tape.Float64,
	kString:        tape.String,
	kBytes:         tape.Binary,
	kEnum:          tape.String,
}

// leafNode reads one scalar or enum value.
type leafNode struct {
	path string
	kind leafKind
	enum protoreflect.EnumValueDescriptors // kEnum
}

// compileLeaf picks the conversion for scalar field fd into a column of
// type tt, refusing pairs Iceberg evolution does not allow.
func compileLeaf(fd protoreflect.FieldDescriptor, tt iceberg.Type, path string) (*leafNode, error) {
	wt := scalarOf(fd)
	if !codec.Promotes(wt, tt) {
		return nil, incompatible(path, "writer %s (%s), table %s", wt, fd.Kind(), tt)
	}
	n := &leafNode{path: path}
	switch fd.Kind() {
	case protoreflect.BoolKind:
		n.kind = kBool
	case protoreflect.Int32Kind, protoreflect.Sint32Kind, protoreflect.Sfixed32Kind:
		n.kind = kInt32
		if tt.Equals(iceberg.PrimitiveTypes.Int64) {
			n.kind = kInt32ToLong
		}
	case protoreflect.Int64Kind, protoreflect.Sint64Kind, protoreflect.Sfixed64Kind:
		n.kind = kInt64
	case protoreflect.Uint32Kind, protoreflect.Fixed32Kind:
		n.kind = kUint32
	case protoreflect.Uint64Kind, protoreflect.Fixed64Kind:
		n.kind = kUint64
	case protoreflect.FloatKind:
		n.kind = kFloat
		if tt.Equals(iceberg.PrimitiveTypes.Float64) {
			n.kind = kFloatToDouble
		}
	case protoreflect.DoubleKind:
		n.kind = kDouble
	case protoreflect.StringKind:
		n.kind = kString
	case protoreflect.BytesKind:
		n.kind = kBytes
	case protoreflect.EnumKind:
		n.kind = kEnum
		n.enum = fd.Enum().Values()
	}

	return n, nil
}

func (n *leafNode) read(s *state, v protoreflect.Value) error {
	t := &s.t
	switch n.kind {
	case kBool:
		t.PutBool(v.Bool())
	case kInt32, kInt32ToLong, kInt64:
		t.PutInt(v.Int())
	case kUint32:
		t.PutInt(int64(v.Uint()))
	case kUint64:
		t.PutDec(decimal128.FromU64(v.Uint()))
	case kFloat, kFloatToDouble, kDouble:
		t.PutFloat(v.Float())
	case kString:
		// proto.Unmarshal checks proto3 strings; proto2 ones (and
		// editions with utf8_validation NONE) arrive unchecked.
		str := v.String()
		if !utf8.ValidString(str) {
			return outOfRange(n.path, "string is not valid UTF-8")
		}
		t.PutStr(str)
	case kBytes:
		t.PutBytes(v.Bytes())
	case kEnum:
		num := v.Enum()
		if ev := n.enum.ByNumber(num); ev != nil {
			t.PutStr(string(ev.Name()))
		} else {
			// An open (proto3) enum keeps numbers it does not declare;
			// protojson writes them as numbers too.
			t.PutStr(strconv.Itoa(int(num)))
		}
	}

	return nil
}

func (n *leafNode) write(t *tape.Tape, b array.Builder) { t.Write(writeKinds[n.kind], b) }

// wrapperNode is a google.protobuf wrapper message (Int32Value, ...): its
// field "value" as a leaf. Its absence is the enclosing field's null.
type wrapperNode struct {
	value protoreflect.FieldDescriptor
	inner *leafNode
}

func (n *wrapperNode) read(s *state, v protoreflect.Value) error {
	return n.inner.read(s, v.Message().Get(n.value))
}

func (n *wrapperNode) write(t *tape.Tape, b array.Builder) { n.inner.write(t, b) }

const microsPerSecond int64 = 1_000_000

// timeNode is a google.protobuf.Timestamp (to timestamptz) or Duration (to
// long), both in microseconds. Sub-microsecond nanos are truncated toward
// zero (for a Timestamp, whose nanos are never negative, that is also
// toward the past).
type timeNode struct {
	path           string
	duration       bool
	seconds, nanos protoreflect.FieldDescriptor
}

func compileTime(md protoreflect.MessageDescriptor, tt, want iceberg.Type, path string) (node, error) {
	if !tt.Equals(want) {
		return nil, incompatible(path, "writer %s (%s), table %s", md.FullName(), want, tt)
	}

	return &timeNode{
		path:     path,
		duration: md.FullName() == "google.protobuf.Duration",
		seconds:  md.Fields().ByNumber(1),
		nanos:    md.Fields().ByNumber(2),
	}, nil
}

func (n *timeNode) read(s *state, v protoreflect.Value) error {
	m := v.Message()
	sec, nanos := m.Get(n.seconds).Int(), m.Get(n.nanos).Int()
	what := "timestamp"
	if n.duration {
		what = "duration"
		// google/protobuf/duration.proto: nanos in (-1e9, 1e9), with the
		// sign of seconds when seconds is not zero.
		if nanos <= -1e9 || nanos >= 1e9 || (sec > 0 && nanos < 0) || (sec < 0 && nanos > 0) {
			return outOfRange(n.path, "duration %ds %dns: invalid nanos", sec, nanos)
		}
	} else if nanos < 0 || nanos >= 1e9 {
		// google/protobuf/timestamp.proto: nanos in [0, 1e9).
		return outOfRange(n.path, "timestamp %ds %dns: invalid nanos", sec, nanos)
	}
	if sec > math.MaxInt64/microsPerSecond || sec < math.MinInt64/microsPerSecond {
		return outOfRange(n.path, "%s of %d seconds overflows int64 microseconds", what, sec)
	}
	// sec*1e6 now fits, but adding up to ±999,999 µs of nanos can still
	// overflow at the very edge.
	us, frac := sec*microsPerSecond, nanos/1000
	if (frac > 0 && us > math.MaxInt64-frac) || (frac < 0 && us < math.MinInt64-frac) {
		return outOfRange(n.path, "%s of %d seconds overflows int64 microseconds", what, sec)
	}
	us += frac
	// google/protobuf/timestamp.proto: from 0001-01-01T00:00:00Z to
	// 9999-12-31T23:59:59.999999999Z, the range of every format's
	// timestamps.
	if !n.duration && !codec.TimestampInRange(us) {
		return codec.TimestampRangeError(n.path, us, fmt.Sprintf("timestamp %ds %dns", sec, nanos))
	}
	s.t.PutInt(us)

	return nil
}

func (n *timeNode) write(t *tape.Tape, b array.Builder) {
	if n.duration {
		t.Write(tape.Int64, b)

		return
	}
	t.Write(tape.Timestamp, b)
}

// jsonNode is a google.protobuf Struct, Value, ListValue or Any, written
// as its compact protojson text.
type jsonNode struct {
	path string
	any  bool
}

func (n *jsonNode) read(s *state, v protoreflect.Value) error {
	m := v.Message()
	out, err := s.json.MarshalAppend(s.jbuf[:0], m.Interface())
	s.jbuf = out[:0]
	if err != nil {
		if !n.any {
			// A Value without a kind, a NaN or infinite number.
			return outOfRange(n.path, "%s has no JSON form: %v", m.Descriptor().FullName(), err)
		}
		// An Any of a type nobody here knows: keep its bytes.
		fd := m.Descriptor().Fields()
		out, err = json.Marshal(struct {
			Type  string `json:"@type"`
			Value []byte `json:"value"`
		}{m.Get(fd.ByNumber(1)).String(), m.Get(fd.ByNumber(2)).Bytes()})
		if err != nil {
			return outOfRange(n.path, "%v", err)
		}
	}
	// protojson varies its whitespace on purpose (its output is not
	// stable); compacting makes a value's text the same on every run.
	s.cbuf.Reset()
	if err := json.Compact(&s.cbuf, out); err != nil {
		return outOfRange(n.path, "%v", err)
	}
	s.t.Keep(s.cbuf.Bytes())

	return nil
}

func (n *jsonNode) write(t *tape.Tape, b array.Builder) { t.Write(tape.StringBytes, b) }

// emptyNode is a message without fields into a boolean column, as builds
// before MarkerField mapped it: true when present (its absence is the
// enclosing field's null).
type emptyNode struct{}

func (emptyNode) read(*state, protoreflect.Value) error { return nil }

func (emptyNode) write(_ *tape.Tape, b array.Builder) { b.(*array.BooleanBuilder).Append(true) }

// resolver finds the message types an Any names: first among the writer
// schema's files (and their imports), then among the program's generated
// types (the well-known types).
type resolver struct {
	local *dynamicpb.Types
}

func newResolver(fd protoreflect.FileDescriptor) resolver {
	files := new(protoregistry.Files)
	var register func(protoreflect.FileDescriptor)
	register = func(fd protoreflect.FileDescriptor) {
		if _, err := files.FindFileByPath(fd.Path()); err == nil {
			return
		}
		imports := fd.Imports()
		for i := range imports.Len() {
			register(imports.Get(i).FileDescriptor)
		}
		// A conflict (two files declaring one name) only hides a type
		// from Any; nothing else reads this registry.
		_ = files.RegisterFile(fd)
	}
	register(fd)

	return resolver{local: dynamicpb.NewTypes(files)}
}

func (r resolver) FindMessageByName(name protoreflect.FullName) (protoreflect.MessageType, error) {
	if mt, err := r.local.FindMessageByName(name); err == nil {
		return mt, nil
	}

	return protoregistry.GlobalTypes.FindMessageByName(name)
}

func (r resolver) FindMessageByURL(url string) (protoreflect.MessageType, error) {
	if mt, err := r.local.FindMessageByURL(url); err == nil {
		return mt, nil
	}

	return protoregistry.GlobalTypes.FindMessageByURL(url)
}

func (r resolver) FindExtensionByName(name protoreflect.FullName) (protoreflect.ExtensionType, error) {
	if xt, err := r.local.FindExtensionByName(name); err == nil {
		return xt, nil
	}

	return protoregistry.GlobalTypes.FindExtensionByName(name)
}

func (r resolver) FindExtensionByNumber(message protoreflect.FullName, field protoreflect.FieldNumber) (protoreflect.ExtensionType, error) {
	if xt, err := r.local.FindExtensionByNumber(message, field); err == nil {
		return xt, nil
	}

	return protoregistry.GlobalTypes.FindExtensionByNumber(message, field)
}
