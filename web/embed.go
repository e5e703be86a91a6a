// Package web holds the web pages nebula serve embeds, built from this
// directory's sources by `make web` (npm ci && vite build) into dist/,
// which is committed: a fresh clone serves them with no Node on the
// machine, and CI builds them again and fails when dist/ differs from its
// sources' build.
package web

import (
	"embed"
	"io/fs"
)

//go:embed all:dist
var dist embed.FS

//go:embed src/console/gql/persisted-documents.json
var persisted []byte

// TrustedDocuments is the manifest of the console's operations, by the
// SHA-256 of each: what its build generated with its typed documents.
func TrustedDocuments() []byte { return persisted }

// Dist is the built pages: graphiql.html and its content-hashed assets
// under assets/.
func Dist() fs.FS {
	sub, err := fs.Sub(dist, "dist")
	if err != nil {
		panic(err) // dist is embedded: it is always there
	}
	return sub
}
