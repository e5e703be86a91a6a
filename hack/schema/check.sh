#!/usr/bin/env bash
# check.sh: the schema checks of `make lint-schema` (hack/schema/README.md).
#
#   bash hack/schema/check.sh               lint schema.graphqls, then fail on a breaking change since
#                                           hack/schema/released.graphqls that docs/schema-changes.md
#                                           does not announce
#   bash hack/schema/check.sh --self-test   show that the second check fails on an unannounced breaking
#                                           change (a field taken out) and passes once it is announced
#
# Needs hack/schema/node_modules: `npm ci` in hack/schema (make lint-schema runs it).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
bin=$here/node_modules/.bin
[ -x "$bin/graphql-inspector" ] && [ -x "$bin/graphql-schema-linter" ] ||
  { echo "hack/schema/node_modules is missing: run npm ci in hack/schema (make lint-schema does)"; exit 1; }

# breaking SCHEMA [DOC]: the breaking changes from the release to SCHEMA, each announced in DOC or a
# failure; prints announced.js's report (its stderr) on stdout, not the inspector's list of every change.
# verboseChanges: the inspector's default merges a change into another at the same path, and so hid a
# field made nullable behind the description it got in the same change.
breaking() {
  SCHEMA_CHANGES_DOC=${2:-$root/docs/schema-changes.md} "$bin/graphql-inspector" diff \
    "$here/released.graphqls" "$1" --rule verboseChanges --onComplete "$here/announced.js" 2>&1 >/dev/null
}

if [ "${1:-}" = --self-test ]; then
  tmp=$(mktemp -d)
  trap 'rm -rf "$tmp"' EXIT
  # Query.viewer is in the release and announced nowhere: take it out, with its one-line description.
  field='  viewer: Viewer!'
  awk -v f="$field" '$0 == f { if (held && prev !~ /^  ".*"$/) print prev; held = 0; next }
    { if (held) print prev; prev = $0; held = 1 } END { if (held) print prev }' "$root/schema.graphqls" >"$tmp/schema.graphqls"
  grep -qxF "$field" "$root/schema.graphqls" && ! grep -qxF "$field" "$tmp/schema.graphqls" ||
    { echo "self-test: cannot take '$field' out of schema.graphqls; pick another field"; exit 1; }
  if breaking "$tmp/schema.graphqls" >"$tmp/out"; then
    cat "$tmp/out"; echo "self-test FAILED: removing Query.viewer passed the check"; exit 1
  fi
  grep -q 'NOT ANNOUNCED `Query.viewer`' "$tmp/out" ||
    { cat "$tmp/out"; echo "self-test FAILED: the check failed, but not for Query.viewer"; exit 1; }
  sed '/^## Unreleased/a - `Query.viewer` removed (self-test).' "$root/docs/schema-changes.md" >"$tmp/changes.md"
  breaking "$tmp/schema.graphqls" "$tmp/changes.md" >"$tmp/out" ||
    { cat "$tmp/out"; echo "self-test FAILED: announced, Query.viewer still fails the check"; exit 1; }
  echo "self-test ok: an unannounced removal of Query.viewer fails the check; announced, it passes"
  exit 0
fi

echo "== graphql-schema-linter (rules: hack/schema/.graphql-schema-linterrc)"
"$bin/graphql-schema-linter" --config-directory "$here" --format compact "$root/schema.graphqls"
echo "schema.graphqls: no lint errors"
echo "== breaking changes since hack/schema/released.graphqls, announced in docs/schema-changes.md"
breaking "$root/schema.graphqls"
