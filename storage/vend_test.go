package storage_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/tarnhq/tarn/storage"
)

// moto does not enforce IAM or session policies, so the document Tarn
// sends to STS is what proves the scoping: asserted here statement by
// statement.
func TestSessionPolicyReadOnly(t *testing.T) {
	b, err := storage.SessionPolicy([]string{"s3://bkt/wh/sales/orders-abc"}, storage.AccessRead)
	require.NoError(t, err)
	require.JSONEq(t, `{"Version":"2012-10-17","Statement":[
	 {"Sid":"TableObjects","Effect":"Allow","Action":["s3:GetObject"],"Resource":["arn:aws:s3:::bkt/wh/sales/orders-abc/*"]},
	 {"Sid":"ListTablePrefix","Effect":"Allow","Action":["s3:ListBucket"],"Resource":["arn:aws:s3:::bkt"],
	  "Condition":{"StringLike":{"s3:prefix":["wh/sales/orders-abc/*"]}}}]}`, string(b))
}

func TestSessionPolicyReadWrite(t *testing.T) {
	b, err := storage.SessionPolicy([]string{"s3://bkt/wh/t/"}, storage.AccessReadWrite)
	require.NoError(t, err)
	var doc struct {
		Statement []struct {
			Effect   string
			Action   []string
			Resource []string
		}
	}
	require.NoError(t, json.Unmarshal(b, &doc))
	require.Len(t, doc.Statement, 2)
	w := doc.Statement[0]
	require.Equal(t, "Allow", w.Effect)
	require.ElementsMatch(t, []string{"s3:GetObject", "s3:PutObject", "s3:DeleteObject", "s3:AbortMultipartUpload", "s3:ListMultipartUploadParts"}, w.Action)
	require.Equal(t, []string{"arn:aws:s3:::bkt/wh/t/*"}, w.Resource)
	for _, st := range doc.Statement {
		for _, r := range st.Resource {
			require.NotContains(t, r, "*/", "no wildcard above the table")
			require.NotEqual(t, "arn:aws:s3:::bkt/*", r)
		}
	}
}

func TestSessionPolicyRefusesNonTableLocations(t *testing.T) {
	// A location holding an IAM wildcard or variable, or a URI query or
	// fragment, would widen the policy to other tables (a trial's "t?",
	// "*" and "${aws:username}").
	for _, loc := range []string{"s3://bkt", "s3://bkt/", "file:///tmp/x", "gs://b/x",
		"s3://bkt/wh/ns/t?", "s3://bkt/wh/ns/*", "s3://bkt/wh/ns/%2A", "s3://bkt/wh/ns/${aws:username}", "s3://bkt/wh/ns/t#x"} {
		_, err := storage.SessionPolicy([]string{loc}, storage.AccessRead)
		require.ErrorIs(t, err, storage.ErrInvalidArgument, loc)
	}
}

// A table's credentials cover every directory its files lie in (its
// location, write.data.path, a location it moved away from): a trial's
// table with write.data.path could not read its own data files. The
// policy stays within STS's 2,048 characters: past it the trailing
// (oldest) directories are left out, never the current ones.
func TestSessionPolicyCoversEveryDirectory(t *testing.T) {
	b, err := storage.SessionPolicy([]string{"s3://bkt/wh/ns/t", "s3://bkt/wh/ns/t-data"}, storage.AccessReadWrite)
	require.NoError(t, err)
	var doc struct {
		Statement []struct {
			Sid       string
			Resource  []string
			Condition map[string]map[string][]string
		}
	}
	require.NoError(t, json.Unmarshal(b, &doc))
	require.Len(t, doc.Statement, 2)
	require.Equal(t, []string{"arn:aws:s3:::bkt/wh/ns/t/*", "arn:aws:s3:::bkt/wh/ns/t-data/*"}, doc.Statement[0].Resource)
	require.Equal(t, []string{"arn:aws:s3:::bkt"}, doc.Statement[1].Resource)
	require.Equal(t, []string{"wh/ns/t/*", "wh/ns/t-data/*"}, doc.Statement[1].Condition["StringLike"]["s3:prefix"])
	_, err = storage.SessionPolicy(nil, storage.AccessRead)
	require.ErrorIs(t, err, storage.ErrInvalidArgument)

	// 61-character directories: 10 fit; 40 do not, and the policy keeps
	// the first ones.
	dir := func(i int) string { return fmt.Sprintf("s3://analytics-lake-bucket/warehouse/sales/orders-%012d", i) }
	var many []string
	for i := range 40 {
		many = append(many, dir(i))
	}
	b, err = storage.SessionPolicy(many[:10], storage.AccessReadWrite)
	require.NoError(t, err)
	require.LessOrEqual(t, len(b), storage.MaxSessionPolicyBytes)
	require.Contains(t, string(b), strings.TrimPrefix(dir(9), "s3://"))
	b, err = storage.SessionPolicy(many, storage.AccessReadWrite)
	require.NoError(t, err)
	require.LessOrEqual(t, len(b), storage.MaxSessionPolicyBytes)
	require.Contains(t, string(b), strings.TrimPrefix(dir(0), "s3://"), "the current location is kept")
	require.NotContains(t, string(b), strings.TrimPrefix(dir(39), "s3://"))
}

// Regression: the credentials of a table whose location holds a space
// did not reach the files iceberg-go writes for it, whose keys are
// percent-encoded (wh/my%20dir/t/metadata/...: its location provider
// encodes the path and its S3 FileIO keeps the key as is), only those
// written with the raw key (Java, pyiceberg). The policy names both
// spellings.
func TestSessionPolicyCoversEncodedSpelling(t *testing.T) {
	b, err := storage.SessionPolicy([]string{"s3://bkt/wh/my dir/t"}, storage.AccessRead)
	require.NoError(t, err)
	require.JSONEq(t, `{"Version":"2012-10-17","Statement":[
	 {"Sid":"TableObjects","Effect":"Allow","Action":["s3:GetObject"],"Resource":["arn:aws:s3:::bkt/wh/my dir/t/*","arn:aws:s3:::bkt/wh/my%20dir/t/*"]},
	 {"Sid":"ListTablePrefix","Effect":"Allow","Action":["s3:ListBucket"],"Resource":["arn:aws:s3:::bkt"],
	  "Condition":{"StringLike":{"s3:prefix":["wh/my dir/t/*","wh/my%20dir/t/*"]}}}]}`, string(b))
}
