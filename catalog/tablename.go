package catalog

import (
	"bytes"
	"encoding/json"
	"slices"
	"strings"

	"github.com/tarnhq/tarn/internal/strictjson"
	"github.com/tarnhq/tarn/spec"
)

// FormatIdent is id's text as the management API and the CLI print and
// take it, unambiguous whatever its levels hold: the levels and the name
// joined by dots when none of them holds a dot ("sales.eu.orders" is
// ["sales", "eu"].orders), else the REST spec's TableIdentifier as JSON
// ({"namespace":["sales.eu"],"name":"orders"}). ParseIdent reads both.
// (Ident.String, for messages and logs, always joins with dots.)
func FormatIdent(id Ident) string {
	if !slices.ContainsFunc(id.Namespace, hasDot) && !hasDot(id.Name) {
		return id.String()
	}
	b, _ := json.Marshal(spec.TableIdentifier{Namespace: id.Namespace, Name: id.Name}) // strings only: cannot fail
	return string(b)
}

func hasDot(s string) bool { return strings.Contains(s, ".") }

// ParseIdent reads a table's identifier in either form of FormatIdent:
// a TableIdentifier JSON object (for any name: {"namespace":["sales.eu"],
// "name":"orders"}; decoded by strictjson.DecodeKnown: unknown or repeated
// members and trailing data refused), or levels
// and name joined by dots, split at every dot (for names without dots:
// "sales.orders"). The identifier must pass Validate. Errors wrap
// ErrInvalidArgument.
func ParseIdent(s string) (Ident, error) {
	var id Ident
	if strings.HasPrefix(strings.TrimSpace(s), "{") {
		var ti spec.TableIdentifier
		if err := strictjson.DecodeKnown([]byte(s), &ti); err != nil {
			return Ident{}, Errorf(ErrInvalidArgument, `table %s: not a table identifier {"namespace": [...], "name": "..."}`, clip(s))
		}
		id = Ident{Namespace: Namespace(ti.Namespace), Name: ti.Name}
	} else {
		i := strings.LastIndexByte(s, '.')
		if i <= 0 || i == len(s)-1 {
			return Ident{}, Errorf(ErrInvalidArgument, `table %q: want namespace.name (e.g. sales.orders), or {"namespace": [...], "name": "..."} when a level or the name holds a dot`, clip(s))
		}
		id = Ident{Namespace: Namespace(strings.Split(s[:i], ".")), Name: s[i+1:]}
	}
	if err := id.Validate(); err != nil {
		return Ident{}, err
	}
	return id, nil
}

// TableName is a table's identifier as the management API's JSON carries
// it ("table": ...): it decodes from FormatIdent's text (a JSON string)
// or from a TableIdentifier object, which it keeps as FormatIdent's text,
// and encodes as that text. ParseIdent reads it.
type TableName string

// UnmarshalJSON implements json.Unmarshaler.
func (t *TableName) UnmarshalJSON(b []byte) error {
	if b = bytes.TrimSpace(b); len(b) > 0 && b[0] == '{' {
		id, err := ParseIdent(string(b))
		if err != nil {
			return err
		}
		*t = TableName(FormatIdent(id))
		return nil
	}
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return Errorf(ErrInvalidArgument, `table: want a string (namespace.name) or {"namespace": [...], "name": "..."}`)
	}
	*t = TableName(s)
	return nil
}
