#!/usr/bin/env bash
# gqlgen-vendor.sh: builds third_party/gqlgen from scratch, from a gqlgen
# release in the Go module proxy and our patch (third_party/gqlgen/NEBULA.md,
# "To move to a new gqlgen release").
#
#   hack/gqlgen-vendor.sh VERSION [DIR]   write the vendored tree of gqlgen
#                                         VERSION into DIR (default
#                                         third_party/gqlgen, replaced)
#   hack/gqlgen-vendor.sh --prove         build the tree of the version go.mod
#                                         names into a temporary directory and
#                                         fail unless it is third_party/gqlgen,
#                                         file for file and byte for byte (CI,
#                                         through make check-gqlgen)
#
# The tree is:
#   - the packages of the release that the build needs: those that
#     `go list -deps -test` finds from this module's packages (./...) and from
#     the gqlgen tool (`go tool gqlgen`, the module's root package), computed
#     against the patched release. A package is taken as its directory holds
#     it, without its tests (*_test.go) or subdirectories: Go files, its
#     templates (*.gotpl, embedded) and whatever else lies beside them. The
#     root package (main.go) brings only its Go files and the files it embeds
#     (init-templates/), since the repository's root holds its documentation;
#   - the release's LICENSE, go.mod and go.sum;
#   - nebula/gqlgen.patch applied with `patch -p1`;
#   - our own files, copied from the current third_party/gqlgen: NEBULA.md,
#     nebula/, upstream/ and the tests named nebula_test.go.
# A hunk that does not apply (a new release changed the code it patches)
# stops the script with patch's reject files left in DIR: port the hunk by
# hand there, then write the patch again with hack/gqlgen-patch.sh.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
cur="$root/third_party/gqlgen"
mod=github.com/99designs/gqlgen

if [ "${1:-}" = "--prove" ]; then
	version=$(awk -v m="$mod" '$1 == m && $2 ~ /^v/ { print $2; exit }' "$root/go.mod")
	tmp=$(mktemp -d)
	trap 'chmod -R u+w "$tmp" 2>/dev/null; rm -rf "$tmp"' EXIT
	"$0" "$version" "$tmp/gqlgen" >/dev/null
	(cd "$cur" && find . -type f | LC_ALL=C sort) >"$tmp/want"
	(cd "$tmp/gqlgen" && find . -type f | LC_ALL=C sort) >"$tmp/got"
	if ! diff -u --label third_party/gqlgen --label "gqlgen-vendor.sh $version" "$tmp/want" "$tmp/got"; then
		echo "gqlgen-vendor --prove: the set of files differs (above)"
		exit 1
	fi
	if ! diff -r "$cur" "$tmp/gqlgen"; then
		echo "gqlgen-vendor --prove: the contents differ (above)"
		exit 1
	fi
	echo "gqlgen-vendor --prove: hack/gqlgen-vendor.sh $version rebuilds third_party/gqlgen exactly ($(wc -l <"$tmp/got") files)"
	exit 0
fi

version=${1:?usage: hack/gqlgen-vendor.sh VERSION [DIR] | --prove}
dir=${2:-$cur}
patchfile="$cur/nebula/gqlgen.patch"

up=$(cd /tmp && GOFLAGS=-mod=mod go mod download -json "$mod@$version" |
	sed -n 's/^\t"Dir": "\(.*\)",$/\1/p')
[ -d "$up" ] || { echo "gqlgen-vendor: cannot download $mod $version"; exit 1; }

work=$(mktemp -d)
trap 'chmod -R u+w "$work" 2>/dev/null; rm -rf "$work"' EXIT

# The whole release, patched: what the packages are computed against, since
# the patch may add an import.
cp -r "$up" "$work/full"
chmod -R u+w "$work/full"
(cd "$work/full" && patch -p1 --quiet --no-backup-if-mismatch --forward <"$patchfile") || {
	echo "gqlgen-vendor: nebula/gqlgen.patch does not apply to the whole of $mod $version; apply it to $dir by hand (below)"
}

# The packages the build needs: this module's go.mod, with the replace
# pointed at the patched release, in a temporary copy (-modfile).
sed "s|^replace $mod => .*|replace $mod => $work/full|" "$root/go.mod" >"$work/go.mod"
cp "$root/go.sum" "$work/go.sum"
pkgs=$(cd "$root" && GOFLAGS=-mod=mod go list -modfile="$work/go.mod" -deps -test \
	-f '{{if .Module}}{{if eq .Module.Path "'"$mod"'"}}{{.ImportPath}}{{end}}{{end}}' ./... "$mod" |
	sed 's/ .*//' | LC_ALL=C sort -u)
rootfiles=$(cd "$root" && GOFLAGS=-mod=mod go list -modfile="$work/go.mod" \
	-f '{{range .GoFiles}}{{.}}{{"\n"}}{{end}}{{range .EmbedFiles}}{{.}}{{"\n"}}{{end}}' "$mod")

new="$work/new"
mkdir -p "$new"
take() { # take FILE: copy the release's FILE into the new tree
	mkdir -p "$new/$(dirname "$1")"
	cp "$up/$1" "$new/$1"
}
for f in LICENSE go.mod go.sum $rootfiles; do
	take "$f"
done
for p in $pkgs; do
	[ "$p" = "$mod" ] && continue
	d=${p#"$mod/"}
	for f in $(cd "$up" && find "$d" -maxdepth 1 -type f ! -name '*_test.go' | LC_ALL=C sort); do
		take "$f"
	done
done
chmod -R u+w "$new"

# Our patch, then our own files.
(cd "$new" && patch -p1 --quiet --no-backup-if-mismatch --forward <"$patchfile") || {
	failed=1
}
(cd "$cur" && find . -type f \( -path ./NEBULA.md -o -path './nebula/*' -o -path './upstream/*' -o -name nebula_test.go \)) |
	while IFS= read -r f; do
		mkdir -p "$new/$(dirname "$f")"
		cp "$cur/$f" "$new/$f"
	done

if [ "$dir" = "$cur" ]; then
	rm -rf "$cur"
fi
[ ! -e "$dir" ] || [ -z "$(ls -A "$dir")" ] || { echo "gqlgen-vendor: $dir is not empty"; exit 1; }
mkdir -p "$dir"
cp -r "$new/." "$dir/"
if [ "${failed:-0}" = 1 ]; then
	echo "gqlgen-vendor: some hunks of nebula/gqlgen.patch did not apply to $mod $version: see the *.rej files in $dir"
	exit 1
fi
echo "gqlgen-vendor: $dir is $mod $version ($(echo "$pkgs" | wc -l) packages) with nebula/gqlgen.patch and our files"
