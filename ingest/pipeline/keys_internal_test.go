package pipeline

import (
	"context"
	"testing"

	hamba "github.com/hamba/avro/v2"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/sr"
	"github.com/twmb/franz-go/pkg/sr/srfake"
)

// TestKeyIdentity pins what makes two record keys one key in an upsert
// table: the decoded value, never the bytes. The same Avro key under two
// schema ids (the wire format's header differs) is one key; JSON spacing
// and member order do not matter; a plain string equals its JSON string.
func TestKeyIdentity(t *testing.T) {
	ctx := context.Background()
	reg := srfake.New()
	t.Cleanup(reg.Close)
	rc, err := sr.NewClient(sr.URLs(reg.URL()))
	require.NoError(t, err)
	v1 := `{"type":"record","name":"K","fields":[{"name":"id","type":"long"}]}`
	v2 := `{"type":"record","name":"K","doc":"v2","fields":[{"name":"id","type":"long"}]}`
	s1, err := rc.CreateSchema(ctx, "t-key", sr.Schema{Schema: v1})
	require.NoError(t, err)
	s2, err := rc.CreateSchema(ctx, "t-key", sr.Schema{Schema: v2})
	require.NoError(t, err)
	require.NotEqual(t, s1.ID, s2.ID)
	wire := func(id int, text string, v any) []byte {
		out, err := new(sr.ConfluentHeader).AppendEncode(nil, id, nil)
		require.NoError(t, err)
		body, err := hamba.Marshal(hamba.MustParse(text), v)
		require.NoError(t, err)
		return append(out, body...)
	}
	d := newKeyDecoder(rc, FormatAvro)
	key := func(raw []byte) string {
		t.Helper()
		k, _, bad, err := d.key(ctx, raw)
		require.NoError(t, err)
		require.NoError(t, bad)
		return k
	}
	a1, a2 := key(wire(s1.ID, v1, map[string]any{"id": int64(7)})), key(wire(s2.ID, v2, map[string]any{"id": int64(7)}))
	require.Equal(t, a1, a2, "one key under two schema ids")
	require.Equal(t, `{"id":7}`, a1)
	require.NotEqual(t, a1, key(wire(s1.ID, v1, map[string]any{"id": int64(8)})))

	require.Equal(t, a1, key([]byte(`{ "id": 7 }`)), "JSON key equals the Avro key of the same value")
	require.Equal(t, key([]byte(`{"a":1,"b":2}`)), key([]byte(`{"b":2,"a":1}`)))
	require.Equal(t, key([]byte(`k1`)), key([]byte(`"k1"`)))
	require.NotEqual(t, key([]byte{0xff, 0x01}), key([]byte{0xff, 0x02}))

	_, kind, bad, err := d.key(ctx, nil)
	require.NoError(t, err)
	require.Error(t, bad)
	require.Equal(t, KindNoKey, kind)
	_, kind, bad, err = d.key(ctx, []byte{0, 0, 0, 0x7f, 0x7f, 1})
	require.NoError(t, err)
	require.Error(t, bad, "unknown key schema id")
	require.Equal(t, KindBadKey, kind)
}
