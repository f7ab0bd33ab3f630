// Package ui is Tarn's web console, served under /ui by tarn serve and
// tarn demo: server-rendered HTML (html/template) with a little
// JavaScript, every asset embedded in the binary (no CDN, works offline).
//
// The console holds no catalog or topic logic of its own and asks no
// store: every page reads, and every button acts, through the REST
// Catalog and management API routes, served in process by the API's own
// http.Handler with the signed-in principal's bearer token. So a page
// shows exactly what that principal may see through the API, and an
// action passes the same authentication, authorization (server's
// checksFor), body decoding and error mapping as a client's request.
//
// # Files
//
//   - console.go: Config, New, the routes and the page rendering
//   - api.go: the in-process API client (ErrorModel errors kept)
//   - session.go: sign-in with client credentials (--auth oauth2), the
//     session cookie, CSRF protection
//   - topics.go: the topics list, a topic's page, its actions
//   - catalog.go: namespaces, tables, views; a table's schema, partition
//     spec, properties, snapshots and connection snippets
//   - history.go: the last hour of topic status, sampled in memory
//     (bounded), for rows/s and the charts; charts.go draws them
//   - format.go: numbers, bytes, durations and times for the templates
//   - templates/, static/: the pages, the style sheet and the script
//
// docs/console.md is the user's manual.
package ui
