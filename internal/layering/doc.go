// Package layering holds no code: its test pins the directions in which
// Tarn's packages may import each other (docs/architecture.md, "Packages,
// in dependency order"), so that the arrows keep running one way as new
// rooms (ingest/upsert, delta, publish, catalog/postgres, ui) move in.
package layering
