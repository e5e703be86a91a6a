#!/usr/bin/env bash
# Builds the simulated cluster's binaries (kube-apiserver, kube-controller-manager,
# kube-scheduler, etcd, kwok) into ${NEBULA_SIMCLUSTER_CACHE:-/root/.cache/nebula-simcluster}/bin
# when any is missing or was built from another version. Idempotent: a second run
# with everything in place only prints "up to date".
#
# Usage: hack/simcluster/build.sh [--force]
#
# The Kubernetes build takes ~15 minutes on 2 cores the first time (module
# download + compile); etcd and kwok take well under a minute.
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
CACHE="${NEBULA_SIMCLUSTER_CACHE:-/root/.cache/nebula-simcluster}"
BIN="$CACHE/bin"
KWOK_VERSION="${KWOK_VERSION:-v0.8.0}"
FORCE=0
[[ "${1:-}" == "--force" ]] && FORCE=1

export CGO_ENABLED=0
export GOFLAGS="-buildvcs=false"
# Keep the build module's go.mod as the single source of truth: never edit it here.
export GOWORK=off

log() { printf '[simcluster build %s] %s\n' "$(date +%H:%M:%S)" "$*"; }

mkdir -p "$BIN"
# One build at a time per cache directory (CI and a developer may overlap).
exec 9>"$CACHE/.build.lock"
if ! flock -n 9; then
  log "another build holds $CACHE/.build.lock; waiting (up to 40 min)"
  flock -w 2400 9 || { log "timed out waiting for the build lock"; exit 1; }
fi

cd "$HERE"
KUBE_VERSION="$(go list -m -f '{{.Version}}' k8s.io/kubernetes)"
ETCD_VERSION="$(go list -m -f '{{.Version}}' go.etcd.io/etcd/server/v3)"

# stamp_ok NAME WANT: binary exists, and its stamp file says WANT.
stamp_ok() {
  [[ $FORCE == 0 && -x "$BIN/$1" && -f "$BIN/$1.version" && "$(cat "$BIN/$1.version")" == "$2" ]]
}
write_stamp() { printf '%s\n' "$2" >"$BIN/$1.version"; }

did=()

# --- etcd ---------------------------------------------------------------------
ETCD_STAMP="go.etcd.io/etcd/server/v3 $ETCD_VERSION"
if ! stamp_ok etcd "$ETCD_STAMP"; then
  log "building etcd $ETCD_VERSION"
  start=$(date +%s)
  go build -trimpath -ldflags "-s -w" -o "$BIN/etcd.new" ./cmd/etcd
  mv -f "$BIN/etcd.new" "$BIN/etcd"
  write_stamp etcd "$ETCD_STAMP"
  did+=("etcd $ETCD_VERSION in $(( $(date +%s) - start ))s")
fi

# --- kwok (its own module graph: go install pkg@version) ----------------------
KWOK_STAMP="sigs.k8s.io/kwok $KWOK_VERSION"
if ! stamp_ok kwok "$KWOK_STAMP" || [[ ! -d "$CACHE/kwok-stages" ]]; then
  log "installing kwok $KWOK_VERSION"
  start=$(date +%s)
  tmp="$(mktemp -d "$CACHE/.build.XXXXXX")"
  trap 'rm -rf "$tmp"' EXIT
  (cd "$tmp" && GOBIN="$tmp" go install -trimpath -ldflags "-s -w" "sigs.k8s.io/kwok/cmd/kwok@$KWOK_VERSION")
  # The fast node/pod Stage files ship in the kwok module; copy them next to the
  # binary so start.sh does not depend on the module cache layout.
  dir="$(cd "$tmp" && go mod download -json "sigs.k8s.io/kwok@$KWOK_VERSION" | sed -n 's/^\t"Dir": "\(.*\)",$/\1/p')"
  [[ -d "$dir/kustomize/stage/node/fast" && -d "$dir/kustomize/stage/pod/fast" ]] \
    || { log "kwok stage files not found under $dir/kustomize/stage"; exit 1; }
  rm -rf "$CACHE/kwok-stages"
  mkdir -p "$CACHE/kwok-stages/node" "$CACHE/kwok-stages/pod"
  # only the Stage documents (the folders also hold a kustomization.yaml)
  for kind in node pod; do
    for f in "$dir/kustomize/stage/$kind/fast"/*.yaml; do
      if grep -q '^kind: Stage' "$f"; then cp "$f" "$CACHE/kwok-stages/$kind/"; fi
    done
  done
  chmod -R u+w "$CACHE/kwok-stages"
  mv -f "$tmp/kwok" "$BIN/kwok"
  write_stamp kwok "$KWOK_STAMP"
  rm -rf "$tmp"; trap - EXIT
  did+=("kwok $KWOK_VERSION in $(( $(date +%s) - start ))s")
fi

# kwok's Logs and ClusterLogs CRDs (simcluster.sh installs them so that tests
# can serve a pod's log, or the logs of a namespace's pods, from a file of
# their own); copied from the module like the Stages, also onto a machine
# whose kwok was built before a CRD was needed.
for crd in logs clusterlogs; do
  [[ -f "$CACHE/kwok-crds/kwok.x-k8s.io_$crd.yaml" ]] && continue
  dir="$(cd "$CACHE" && GOFLAGS=-mod=mod go mod download -json "sigs.k8s.io/kwok@$KWOK_VERSION" | sed -n 's/^\t"Dir": "\(.*\)",$/\1/p')"
  [[ -f "$dir/kustomize/crd/bases/kwok.x-k8s.io_$crd.yaml" ]] \
    || { log "kwok's $crd CRD not found under $dir/kustomize/crd/bases"; exit 1; }
  mkdir -p "$CACHE/kwok-crds"
  cp "$dir/kustomize/crd/bases/kwok.x-k8s.io_$crd.yaml" "$CACHE/kwok-crds/"
  chmod u+w "$CACHE/kwok-crds/kwok.x-k8s.io_$crd.yaml"
  did+=("kwok's $crd CRD")
done

# --- Kubernetes control plane -------------------------------------------------
KUBE_STAMP="k8s.io/kubernetes $KUBE_VERSION"
need_kube=0
for b in kube-apiserver kube-controller-manager kube-scheduler; do
  stamp_ok "$b" "$KUBE_STAMP" || need_kube=1
done
if [[ $need_kube == 1 ]]; then
  log "building kube-apiserver, kube-controller-manager, kube-scheduler $KUBE_VERSION (about 15 min on 2 cores the first time)"
  start=$(date +%s)
  v="${KUBE_VERSION#v}"; major="${v%%.*}"; rest="${v#*.}"; minor="${rest%%.*}"
  ld="-s -w"
  for p in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
    ld+=" -X $p.gitVersion=$KUBE_VERSION -X $p.gitMajor=$major -X $p.gitMinor=$minor"
    ld+=" -X $p.gitTreeState=clean -X $p.buildDate=1970-01-01T00:00:00Z"
  done
  tmp="$(mktemp -d "$CACHE/.build.XXXXXX")"
  trap 'rm -rf "$tmp"' EXIT
  go build -trimpath -ldflags "$ld" -o "$tmp/" \
    k8s.io/kubernetes/cmd/kube-apiserver \
    k8s.io/kubernetes/cmd/kube-controller-manager \
    k8s.io/kubernetes/cmd/kube-scheduler
  for b in kube-apiserver kube-controller-manager kube-scheduler; do
    mv -f "$tmp/$b" "$BIN/$b"
    write_stamp "$b" "$KUBE_STAMP"
  done
  rm -rf "$tmp"; trap - EXIT
  did+=("kube $KUBE_VERSION in $(( $(date +%s) - start ))s")
fi

if [[ ${#did[@]} == 0 ]]; then
  log "up to date in $BIN (kube $KUBE_VERSION, etcd $ETCD_VERSION, kwok $KWOK_VERSION)"
else
  for d in "${did[@]}"; do log "built $d"; done
  log "binaries in $BIN"
fi
