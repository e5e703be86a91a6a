# interleave.sh, sourced by the benchmark scripts: interleave <pkg> <flags…>
# builds the test binary of <pkg> for the commit $BASE (in a temporary git
# worktree) and for the working tree, then runs the two in turn $COUNT
# times with the given flags, so that both see the same machine. The runs
# are appended to $out/base.txt and $out/head.txt; $out is removed on exit.
# With RAW=<file>, both runs' raw output (base's, then head's, each under
# a "# base <commit>" / "# head <commit>" line) is also written there.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
base=${BASE:?BASE=<commit> to compare with}
out=$(mktemp -d)
trap 'git worktree remove --force "$out/base" >/dev/null 2>&1 || true; rm -rf "$out"' EXIT

interleave() {
	local pkg=$1
	shift
	git worktree add --detach "$out/base" "$base" >/dev/null
	(cd "$out/base" && go test -c -o "$out/base.test" "./$pkg")
	go test -c -o "$out/head.test" "./$pkg"
	for i in $(seq "$count"); do
		for v in base head; do
			(cd "$pkg" && "$out/$v.test" "$@" -test.count 1) >>"$out/$v.txt"
		done
		echo "run $i of $count" >&2
	done
	if [ -n "${RAW:-}" ]; then
		{
			echo "# interleave $pkg $* -test.count 1, COUNT=$count, $(date -u '+%Y-%m-%d %H:%M UTC')"
			echo "# base $(git rev-parse --short "$base")"
			cat "$out/base.txt"
			echo "# head $(git rev-parse --short HEAD)$(git diff --quiet HEAD || echo ' (with uncommitted changes)')"
			cat "$out/head.txt"
		} >"$RAW"
	fi
}

# label names a side of the comparison: the base commit or this tree's.
label() { [ "$1" = base ] && echo "$base" || git rev-parse --short HEAD; }
