package ui

import (
	"net/http"
	"slices"
	"strconv"
	"strings"

	"github.com/tarnhq/tarn/catalog"
)

// snippet is a ready-to-copy way to read a table from an engine.
type snippet struct {
	Engine, Lang, Code string
}

// catalogURI is the URI engines reach the catalog at, as the browser
// reached the console (behind a proxy, its Host and X-Forwarded-Proto).
func catalogURI(r *http.Request) string {
	scheme := "http"
	if secure(r) {
		scheme = "https"
	}
	return scheme + "://" + r.Host
}

// snippets are the connection snippets of table id for pyiceberg,
// Spark, Trino and DuckDB, as README's "Connect an engine" writes them;
// with --auth oauth2 each passes client credentials (docs/engines.md
// "Credentials"), left as placeholders.
func (c *Console) snippets(r *http.Request, id catalog.Ident) []snippet {
	uri := catalogURI(r)
	oauth := c.cfg.Auth != nil
	dotted := strings.Join(append(append([]string{}, id.Namespace...), id.Name), ".")
	quote := func(q string) string {
		quoted := make([]string, 0, len(id.Namespace)+1)
		for _, p := range append(append([]string{}, id.Namespace...), id.Name) {
			quoted = append(quoted, q+strings.ReplaceAll(p, q, q+q)+q)
		}
		return strings.Join(quoted, ".")
	}
	parts := append(append([]string{}, id.Namespace...), id.Name)
	pyName := `"` + dotted + `"`
	if len(id.Namespace) != 1 || slices.ContainsFunc(parts, func(p string) bool { return strings.ContainsAny(p, `."\`) }) {
		// A tuple keeps levels apart that hold dots.
		quoted := make([]string, len(parts))
		for i, p := range parts {
			quoted[i] = strconv.Quote(p)
		}
		pyName = "(" + strings.Join(quoted, ", ") + ")"
	}
	cred := ""
	if oauth {
		cred = `, credential="<client-id>:<client-secret>"`
	}
	py := "from pyiceberg.catalog import load_catalog\n\n" +
		`catalog = load_catalog("tarn", type="rest", uri="` + uri + `"` + cred + ")\n" +
		"table = catalog.load_table(" + pyName + ")\n" +
		"print(table.scan(limit=10).to_arrow())\n"
	spark := "spark-sql \\\n" +
		"  --conf spark.sql.extensions=org.apache.iceberg.spark.extensions.IcebergSparkSessionExtensions \\\n" +
		"  --conf spark.sql.catalog.tarn=org.apache.iceberg.spark.SparkCatalog \\\n" +
		"  --conf spark.sql.catalog.tarn.type=rest \\\n" +
		"  --conf spark.sql.catalog.tarn.uri=" + uri
	if oauth {
		spark += " \\\n  --conf spark.sql.catalog.tarn.credential=<client-id>:<client-secret>"
	}
	spark += "\n\nSELECT * FROM tarn." + quote("`") + " LIMIT 10;\n"
	trino := "# etc/catalog/tarn.properties\nconnector.name=iceberg\niceberg.catalog.type=rest\niceberg.rest-catalog.uri=" + uri + "\n"
	if oauth {
		trino += "iceberg.rest-catalog.security=OAUTH2\niceberg.rest-catalog.oauth2.credential=<client-id>:<client-secret>\n"
	}
	trino += "fs.local.enabled=true\nlocal.location=/\n\nSELECT * FROM tarn." + quote(`"`) + " LIMIT 10;\n"
	duck := "INSTALL iceberg; LOAD iceberg;\n"
	if oauth {
		duck += "CREATE SECRET tarn_secret (TYPE iceberg, CLIENT_ID '<client-id>', CLIENT_SECRET '<client-secret>', OAUTH2_SERVER_URI '" + uri + "/v1/oauth/tokens');\n" +
			"ATTACH 'default' AS tarn (TYPE iceberg, ENDPOINT '" + uri + "', SECRET tarn_secret);\n"
	} else {
		duck += "ATTACH 'default' AS tarn (TYPE iceberg, ENDPOINT '" + uri + "', AUTHORIZATION_TYPE 'none');\n"
	}
	duck += "SELECT * FROM tarn." + quote(`"`) + " LIMIT 10;\n"
	return []snippet{
		{Engine: "pyiceberg", Lang: "python", Code: py},
		{Engine: "Spark", Lang: "sh", Code: spark},
		{Engine: "Trino", Lang: "properties", Code: trino},
		{Engine: "DuckDB", Lang: "sql", Code: duck},
	}
}
