#!/usr/bin/env bash
# gqlgen-patch.sh: writes third_party/gqlgen/nebula/gqlgen.patch, the diff
# of the vendored gqlgen against the release it was taken from (the module
# proxy's copy), file by file, in the form `patch -p1` applies.
set -euo pipefail
cd "$(dirname "$0")/../third_party/gqlgen"
# The release go.mod requires (the replace points the build at our copy).
version=$(awk '$1 == "github.com/99designs/gqlgen" && $2 ~ /^v/ { print $2; exit }' ../../go.mod)
up=$(cd /tmp && GOFLAGS=-mod=mod go mod download -json "github.com/99designs/gqlgen@$version" |
	sed -n 's/^\t"Dir": "\(.*\)",$/\1/p')
for f in $(find codegen graphql -type f \( -name '*.go' -o -name '*.gotpl' \) | LC_ALL=C sort); do
	[ -f "$up/$f" ] || continue # our own files (tests) are not part of the patch
	cmp -s "$up/$f" "$f" && continue
	echo "diff -ruN a/$f b/$f"
	diff -u --label "a/$f" --label "b/$f" "$up/$f" "$f" || true
done >nebula/gqlgen.patch
