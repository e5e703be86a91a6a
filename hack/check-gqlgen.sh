#!/usr/bin/env bash
# check-gqlgen.sh: fails unless third_party/gqlgen is the gqlgen release go.mod
# names plus third_party/gqlgen/nebula/gqlgen.patch, nothing else.
#
#   hack/check-gqlgen.sh [DIR]     check DIR (default third_party/gqlgen)
#   hack/check-gqlgen.sh --self-test
#                                  check that a one-line change to a copy of
#                                  the vendored tree is caught (CI runs both)
#
# Every file of DIR that the release has must equal the release's file with
# the patch applied; DIR may leave release files out (it vendors what the
# build needs) and holds only these files of its own: NEBULA.md, nebula/,
# upstream/ and tests named nebula_test.go. Each patch of upstream/ must apply
# to the pristine release (with its prerequisite, if its header names one).
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
# The release go.mod requires (the replace points the build at our copy).
version=$(awk '$1 == "github.com/99designs/gqlgen" && $2 ~ /^v/ { print $2; exit }' "$root/go.mod")

if [ "${1:-}" = "--self-test" ]; then
	tmp=$(mktemp -d)
	trap 'rm -rf "$tmp"' EXIT
	cp -r "$root/third_party/gqlgen" "$tmp/gqlgen"
	# One line, in a file the patch does not touch and in one it does.
	for f in graphql/id.go graphql/resolve_field.go; do
		rm -rf "$tmp/changed" && cp -r "$tmp/gqlgen" "$tmp/changed"
		chmod -R u+w "$tmp/changed"
		echo "// drift" >>"$tmp/changed/$f"
		if "$0" "$tmp/changed" >"$tmp/out" 2>&1; then
			echo "check-gqlgen: a changed $f went unnoticed"; exit 1
		fi
		grep -q "$f" "$tmp/out" || { echo "check-gqlgen: the failure for a changed $f does not name it:"; cat "$tmp/out"; exit 1; }
	done
	# A file of our own that is not allowed.
	rm -rf "$tmp/changed" && cp -r "$tmp/gqlgen" "$tmp/changed" && chmod -R u+w "$tmp/changed"
	echo "package graphql" >"$tmp/changed/graphql/extra.go"
	if "$0" "$tmp/changed" >"$tmp/out" 2>&1; then
		echo "check-gqlgen: a file added to the vendored tree went unnoticed"; exit 1
	fi
	echo "check-gqlgen self-test: a one-line change (patched and unpatched file) and an added file are caught"
	exit 0
fi

dir="$(cd "${1:-$root/third_party/gqlgen}" && pwd)"
up=$(cd /tmp && GOFLAGS=-mod=mod go mod download -json "github.com/99designs/gqlgen@$version" |
	sed -n 's/^\t"Dir": "\(.*\)",$/\1/p')
[ -d "$up" ] || { echo "check-gqlgen: cannot download gqlgen $version"; exit 1; }

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
# The release, patched.
cp -r "$up" "$work/release"
chmod -R u+w "$work/release"
(cd "$work/release" && patch -p1 --quiet --no-backup-if-mismatch --forward <"$dir/nebula/gqlgen.patch") ||
	{ echo "check-gqlgen: nebula/gqlgen.patch does not apply to gqlgen $version"; exit 1; }

fail=0
while IFS= read -r f; do
	case "$f" in
	NEBULA.md | nebula/* | upstream/* | */nebula_test.go) continue ;;
	esac
	if [ ! -f "$work/release/$f" ]; then
		echo "check-gqlgen: $f is in third_party/gqlgen but not in gqlgen $version (nor allowed as our own)"
		fail=1
	elif ! cmp -s "$work/release/$f" "$dir/$f"; then
		echo "check-gqlgen: $f differs from gqlgen $version with nebula/gqlgen.patch applied:"
		diff -u --label "release+patch/$f" --label "third_party/gqlgen/$f" "$work/release/$f" "$dir/$f" | head -20 || true
		fail=1
	fi
done < <(cd "$dir" && find . -type f | sed 's|^\./||' | LC_ALL=C sort)

# The patches prepared for upstream (upstream/NN-*.patch): each applies to the
# pristine release on its own, without fuzz, or on top of the one its header
# names ("# Prerequisite: NN-….patch").
ups=0
if compgen -G "$dir/upstream/*.patch" >/dev/null; then
	cp -r "$up" "$work/pristine"
	chmod -R u+w "$work/pristine"
	for p in "$dir"/upstream/*.patch; do
		name=$(basename "$p")
		target="$work/pristine"
		pre=$(sed -n 's/^# Prerequisite: \([^ ]*\.patch\).*/\1/p' "$p")
		if [ -n "$pre" ]; then
			rm -rf "$work/pre" && cp -r "$work/pristine" "$work/pre"
			if ! patch -d "$work/pre" -p1 -F0 --quiet --no-backup-if-mismatch <"$dir/upstream/$pre" >/dev/null; then
				echo "check-gqlgen: upstream/$name: its prerequisite upstream/$pre does not apply to gqlgen $version"
				fail=1
				continue
			fi
			target="$work/pre"
		fi
		if ! patch -d "$target" -p1 -F0 --dry-run --quiet <"$p" >"$work/out" 2>&1; then
			echo "check-gqlgen: upstream/$name does not apply cleanly to gqlgen $version${pre:+ with upstream/$pre}:"
			cat "$work/out"
			fail=1
		fi
		ups=$((ups + 1))
	done
fi
[ "$fail" = 0 ] || exit 1
echo "check-gqlgen: third_party/gqlgen is gqlgen $version plus nebula/gqlgen.patch ($(grep -c '^diff ' "$dir/nebula/gqlgen.patch") files patched); the $ups patches of upstream/ apply to the release"
