#!/usr/bin/env bash
# Simulated Kubernetes cluster on loopback: etcd + kube-apiserver +
# kube-controller-manager + kube-scheduler + kwok (one fake node, pods that
# "run" without containers). Binaries come from build.sh.
#
# Usage:
#   hack/simcluster/build.sh                # once: builds the binaries (cached)
#   hack/simcluster/simcluster.sh start     # prints export lines on stdout, logs on stderr
#   hack/simcluster/simcluster.sh stop
#   hack/simcluster/simcluster.sh status
#   eval "$(hack/simcluster/simcluster.sh env)"   # KUBECONFIG=... etc.
#   hack/simcluster/simcluster.sh check    # go build ./check and run it (see check/main.go)
#
# Environment:
#   NEBULA_SIMCLUSTER_CACHE  binaries (default /root/.cache/nebula-simcluster)
#   NEBULA_SIMCLUSTER_DIR    state dir: certs, etcd data, logs, kubeconfig, pids
#                            (default ${TMPDIR:-/tmp}/nebula-simcluster)
#   NEBULA_SIMCLUSTER_CONTROLLERS  kube-controller-manager --controllers list
#   NEBULA_SIMCLUSTER_NODE   name of the kwok node (default kwok-node-0)
#   NEBULA_SIMCLUSTER_TIMEOUT seconds allowed for each readiness wait (default 60)
#   NEBULA_SIMCLUSTER_PODS   pods the node takes (default 5000)
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
CACHE="${NEBULA_SIMCLUSTER_CACHE:-/root/.cache/nebula-simcluster}"
BIN="$CACHE/bin"
DIR="${NEBULA_SIMCLUSTER_DIR:-${TMPDIR:-/tmp}/nebula-simcluster}"
CONTROLLERS="${NEBULA_SIMCLUSTER_CONTROLLERS:-deployment-controller,replicaset-controller,job-controller,ttl-after-finished-controller,serviceaccount-controller,serviceaccount-token-controller,namespace-controller,garbage-collector-controller}"
NODE="${NEBULA_SIMCLUSTER_NODE:-kwok-node-0}"
TIMEOUT="${NEBULA_SIMCLUSTER_TIMEOUT:-60}"
# The node's pod capacity. A kubelet's default is 110; the agent-at-scale
# benchmark (e2e/scale_test.go, issue 10) runs 50 environments x 20 services
# of 1-2 replicas, 1,500 pods, and twice that while a new release starts
# beside the old one: 5,000 leaves room for both and for other tests.
PODS="${NEBULA_SIMCLUSTER_PODS:-5000}"
COMPONENTS=(etcd kube-apiserver kube-controller-manager kube-scheduler kwok)

log() { printf '[simcluster %s] %s\n' "$(date +%H:%M:%S)" "$*" >&2; }
die() { log "ERROR: $*"; exit 1; }

# ---------------------------------------------------------------------------
# process bookkeeping: $DIR/pids holds "name pid" lines for what start launched.

# alive NAME PID: the pid is running and is still our binary (guards against pid reuse).
alive() {
  local exe
  exe="$(readlink "/proc/$2/exe" 2>/dev/null)" || return 1
  [[ "$exe" == "$BIN/$1" || "$exe" == "$BIN/$1 (deleted)" ]] && return 0
  # Just started: the background shell or setsid has not exec'd the
  # component yet. (A pid reused by another program is neither.)
  [[ "$exe" == */setsid || "$exe" == */bash ]] && [[ "$(cat "/proc/$2/stat" 2>/dev/null)" != *") Z "* ]]
}

running() {
  [[ -f "$DIR/pids" ]] || return 1
  local name pid n=0
  while read -r name pid; do
    alive "$name" "$pid" || return 1
    n=$((n + 1))
  done <"$DIR/pids"
  [[ $n == ${#COMPONENTS[@]} ]]
}

launch() { # launch NAME ARGS... : start $BIN/NAME in its own session, log to $DIR/logs/NAME.log
  local name="$1"; shift
  setsid "$BIN/$name" "$@" </dev/null >"$DIR/logs/$name.log" 2>&1 &
  echo "$name $!" >>"$DIR/pids"
}

stop_all() {
  [[ -d "$DIR" ]] || { log "nothing to stop ($DIR does not exist)"; return 0; }
  if [[ -f "$DIR/pids" ]]; then
    local lines=() name pid i
    mapfile -t lines <"$DIR/pids"
    # reverse start order: kwok, scheduler, controller-manager, apiserver, etcd
    for ((i = ${#lines[@]} - 1; i >= 0; i--)); do
      read -r name pid <<<"${lines[$i]}"
      if alive "$name" "$pid"; then
        kill -TERM "$pid" 2>/dev/null || true
        local deadline=$((SECONDS + 15))
        while alive "$name" "$pid" && ((SECONDS < deadline)); do sleep 0.2; done
        if alive "$name" "$pid"; then
          log "$name ($pid) ignored SIGTERM for 15s; SIGKILL"
          kill -KILL "$pid" 2>/dev/null || true
        fi
        log "stopped $name ($pid)"
      fi
    done
  fi
  # Keep the last run's logs outside the repo for post-mortems (CI).
  if [[ -d "$DIR/logs" ]]; then
    rm -rf "$CACHE/last-logs/${DIR##*/}" && mkdir -p "$CACHE/last-logs" && cp -r "$DIR/logs" "$CACHE/last-logs/${DIR##*/}" 2>/dev/null || true
  fi
  rm -rf "$DIR"
  log "removed $DIR (logs of this run kept in $CACHE/last-logs/${DIR##*/})"
}

# ---------------------------------------------------------------------------
# helpers

# free_port: a TCP port on 127.0.0.1 nobody listens on (and not handed out already).
USED_PORTS=" "
free_port() {
  local p i
  for ((i = 0; i < 200; i++)); do
    # 20000-31999: below Linux's ephemeral range (32768+), so an outgoing
    # connection cannot take the port between this check and the bind.
    p=$((20000 + (RANDOM * 32768 + RANDOM) % 12000))
    [[ "$USED_PORTS" == *" $p "* ]] && continue
    if ! (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null; then
      USED_PORTS+="$p "
      echo "$p"
      return 0
    fi
  done
  die "no free port found"
}

# wait_for WHAT CMD...: run CMD until it succeeds, at most $TIMEOUT seconds; also
# fails fast when one of our processes has died.
wait_for() {
  local what="$1"; shift
  local deadline=$((SECONDS + TIMEOUT)) t0=$SECONDS
  until "$@" >/dev/null 2>&1; do
    local name pid
    while read -r name pid; do
      alive "$name" "$pid" || { tail -n 30 "$DIR/logs/$name.log" >&2 || true; die "$name exited while waiting for $what (its log: $DIR/logs/$name.log, kept after cleanup in $CACHE/last-logs/${DIR##*/}/)"; }
    done <"$DIR/pids"
    ((SECONDS < deadline)) || die "timed out after ${TIMEOUT}s waiting for $what"
    sleep 0.25
  done
  log "$what ready after $((SECONDS - t0))s"
}

api() { # api METHOD PATH [curl args...]: admin request to the apiserver
  local method="$1" path="$2"; shift 2
  curl -sS --fail --max-time 10 --cacert "$DIR/pki/ca.crt" \
    --cert "$DIR/pki/admin.crt" --key "$DIR/pki/admin.key" \
    -X "$method" "https://127.0.0.1:$API_PORT$path" "$@"
}

crd_established() { # crd_established NAME
  api GET "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/$1" | tr -d ' \n' | grep -q '"type":"Established","status":"True"'
}

gen_pki() {
  local p="$DIR/pki"
  mkdir -p "$p"
  (
    cd "$p"
    openssl req -x509 -newkey rsa:2048 -nodes -keyout ca.key -out ca.crt -days 3650 \
      -subj "/CN=nebula-simcluster-ca" \
      -addext "basicConstraints=critical,CA:TRUE" -addext "keyUsage=critical,keyCertSign,cRLSign,digitalSignature"
    # apiserver serving cert: loopback + the in-cluster names of the kubernetes Service
    openssl req -newkey rsa:2048 -nodes -keyout apiserver.key -out apiserver.csr -subj "/CN=kube-apiserver"
    printf '%s\n' "basicConstraints=CA:FALSE" "keyUsage=critical,digitalSignature,keyEncipherment" \
      "extendedKeyUsage=serverAuth" \
      "subjectAltName=IP:127.0.0.1,IP:10.96.0.1,DNS:localhost,DNS:kubernetes,DNS:kubernetes.default,DNS:kubernetes.default.svc,DNS:kubernetes.default.svc.cluster.local" >apiserver.ext
    openssl x509 -req -in apiserver.csr -CA ca.crt -CAkey ca.key -CAcreateserial -days 3650 \
      -extfile apiserver.ext -out apiserver.crt
    # admin client cert (group system:masters: full access, bypasses RBAC)
    openssl req -newkey rsa:2048 -nodes -keyout admin.key -out admin.csr -subj "/O=system:masters/CN=nebula-simcluster-admin"
    printf '%s\n' "basicConstraints=CA:FALSE" "keyUsage=critical,digitalSignature,keyEncipherment" \
      "extendedKeyUsage=clientAuth" >client.ext
    openssl x509 -req -in admin.csr -CA ca.crt -CAkey ca.key -CAcreateserial -days 3650 \
      -extfile client.ext -out admin.crt
    # front-proxy client: lets the apiserver publish a requestheader CA, which the
    # delegated authentication of kube-controller-manager/kube-scheduler (and any
    # aggregated APIService) looks up; without it they log errors every few seconds.
    openssl req -newkey rsa:2048 -nodes -keyout front-proxy-client.key -out front-proxy-client.csr -subj "/CN=front-proxy-client"
    openssl x509 -req -in front-proxy-client.csr -CA ca.crt -CAkey ca.key -CAcreateserial -days 3650 \
      -extfile client.ext -out front-proxy-client.crt
    # kwok's kubelet endpoint (pods/log): served on loopback, verified by the
    # apiserver, which authenticates to it with its own client cert.
    openssl req -newkey rsa:2048 -nodes -keyout kwok.key -out kwok.csr -subj "/CN=$NODE"
    printf '%s\n' "basicConstraints=CA:FALSE" "keyUsage=critical,digitalSignature,keyEncipherment" \
      "extendedKeyUsage=serverAuth" "subjectAltName=IP:127.0.0.1,DNS:localhost,DNS:$NODE" >kwok.ext
    openssl x509 -req -in kwok.csr -CA ca.crt -CAkey ca.key -CAcreateserial -days 3650 \
      -extfile kwok.ext -out kwok.crt
    openssl req -newkey rsa:2048 -nodes -keyout apiserver-kubelet-client.key -out apiserver-kubelet-client.csr \
      -subj "/O=system:masters/CN=kube-apiserver-kubelet-client"
    openssl x509 -req -in apiserver-kubelet-client.csr -CA ca.crt -CAkey ca.key -CAcreateserial -days 3650 \
      -extfile client.ext -out apiserver-kubelet-client.crt
    # service-account token signing key pair
    openssl genrsa -out sa.key 2048
    openssl rsa -in sa.key -pubout -out sa.pub
  ) >"$DIR/logs/pki.log" 2>&1 || { cat "$DIR/logs/pki.log" >&2; die "openssl failed"; }
}

write_kubeconfig() {
  local b64="base64 -w0"
  cat >"$DIR/kubeconfig" <<EOF
apiVersion: v1
kind: Config
clusters:
- name: simcluster
  cluster:
    server: https://127.0.0.1:$API_PORT
    certificate-authority-data: $($b64 <"$DIR/pki/ca.crt")
users:
- name: admin
  user:
    client-certificate-data: $($b64 <"$DIR/pki/admin.crt")
    client-key-data: $($b64 <"$DIR/pki/admin.key")
contexts:
- name: simcluster
  context:
    cluster: simcluster
    user: admin
current-context: simcluster
EOF
  chmod 600 "$DIR/kubeconfig"
}

write_kwok_config() {
  local f="$DIR/kwok.yaml" s
  {
    cat <<EOF
apiVersion: config.kwok.x-k8s.io/v1alpha1
kind: KwokConfiguration
# kwok applies no defaults to a configuration read from a file: set them here.
options:
  manageAllNodes: true
  cidr: 10.244.0.0/16
  # The node's address is where the apiserver reaches its "kubelet" for
  # pods/log: kwok's server, on loopback.
  nodeIP: 127.0.0.1
  nodePort: $KWOK_PORT
  podPlayStageParallelism: 4
  nodePlayStageParallelism: 4
  nodeLeaseParallelism: 4
  nodeLeaseDurationSeconds: 40
  podsOnNodeSyncParallelism: 1
  enablePodsOnNodeSyncListPager: true
  enablePodsOnNodeSyncStreamWatch: false
  enableDebuggingHandlers: true
  enableProfilingHandler: false
  enableContentionProfiling: false
EOF
    # kwok's own fast stages (copied from its module by build.sh), then ours.
    for s in "$CACHE"/kwok-stages/node/*.yaml "$CACHE"/kwok-stages/pod/*.yaml "$HERE"/stages/*.yaml; do
      grep -q '^kind: Stage' "$s" || continue
      printf -- '---\n# from %s\n' "$s"
      cat "$s"
      printf '\n'
    done
  } >"$f"
}

node_json() {
  cat <<EOF
{"apiVersion":"v1","kind":"Node","metadata":{"name":"$NODE",
 "annotations":{"kwok.x-k8s.io/node":"fake","node.alpha.kubernetes.io/ttl":"0"},
 "labels":{"type":"kwok","kubernetes.io/hostname":"$NODE","kubernetes.io/os":"linux","kubernetes.io/arch":"amd64","node-role.kubernetes.io/agent":""}},
 "spec":{},
 "status":{"allocatable":{"cpu":"32","memory":"256Gi","pods":"$PODS"},"capacity":{"cpu":"32","memory":"256Gi","pods":"$PODS"},
  "nodeInfo":{"architecture":"amd64","operatingSystem":"linux","kubeletVersion":"fake","kubeProxyVersion":"fake","bootID":"","containerRuntimeVersion":"","kernelVersion":"","machineID":"","osImage":"","systemUUID":""}}}
EOF
}

# (match on captured output, not "curl | grep -q": with pipefail, grep -q exiting
# early makes curl fail with "Failed writing body" and the pipeline false)
node_ready() {
  local body
  body="$(api GET "/api/v1/nodes/$NODE")" || return 1
  [[ "$(tr -d ' \n' <<<"$body")" == *'"type":"Ready","status":"True"'* ]]
}
default_sa() { api GET /api/v1/namespaces/default/serviceaccounts/default; }
https_ok() { curl -sk --fail --max-time 5 "https://127.0.0.1:$1/healthz"; }

print_env() {
  local api
  api="$(sed -n 's/^    server: //p' "$DIR/kubeconfig")"
  cat <<EOF
export KUBECONFIG=$DIR/kubeconfig
export NEBULA_SIMCLUSTER_DIR=$DIR
export NEBULA_SIMCLUSTER_APISERVER=$api
export NEBULA_SIMCLUSTER_CA=$DIR/pki/ca.crt
export NEBULA_SIMCLUSTER_NODE=$NODE
EOF
}

# ---------------------------------------------------------------------------

start() {
  command -v openssl >/dev/null || die "openssl is required (apt-get install -y openssl)"
  command -v curl >/dev/null || die "curl is required (apt-get install -y curl)"
  local b
  for b in "${COMPONENTS[@]}"; do
    [[ -x "$BIN/$b" ]] || die "$BIN/$b missing: run $HERE/build.sh first"
  done
  [[ -d "$CACHE/kwok-stages/pod" ]] || die "$CACHE/kwok-stages missing: run $HERE/build.sh first"
  [[ -f "$CACHE/kwok-crds/kwok.x-k8s.io_logs.yaml" && -f "$CACHE/kwok-crds/kwok.x-k8s.io_clusterlogs.yaml" ]] \
    || die "$CACHE/kwok-crds is not complete: run $HERE/build.sh first"
  [[ "$PODS" =~ ^[1-9][0-9]*$ ]] || die "NEBULA_SIMCLUSTER_PODS=$PODS is not a positive number"

  if running; then
    log "already running; kubeconfig: $DIR/kubeconfig"
    print_env
    return 0
  fi
  if [[ -e "$DIR" ]]; then
    log "stale state in $DIR; cleaning up first"
    stop_all
  fi
  local t_start=$SECONDS
  mkdir -p "$DIR/logs" "$DIR/etcd" "$DIR/certs/kcm" "$DIR/certs/scheduler"
  chmod 700 "$DIR"
  : >"$DIR/pids"
  # On failure after this point, tear down whatever was started.
  trap 'rc=$?; if ((rc != 0)); then log "start failed; stopping what was started"; stop_all; fi' EXIT

  ETCD_PORT=$(free_port); ETCD_PEER_PORT=$(free_port); API_PORT=$(free_port)
  KCM_PORT=$(free_port); SCHED_PORT=$(free_port); KWOK_PORT=$(free_port)
  cat >"$DIR/ports" <<EOF
etcd=$ETCD_PORT
etcd_peer=$ETCD_PEER_PORT
apiserver=$API_PORT
controller_manager=$KCM_PORT
scheduler=$SCHED_PORT
kwok=$KWOK_PORT
EOF

  gen_pki
  write_kubeconfig
  write_kwok_config
  log "state in $DIR; ports: etcd=$ETCD_PORT apiserver=$API_PORT kcm=$KCM_PORT scheduler=$SCHED_PORT kwok=$KWOK_PORT"

  launch etcd \
    --name=simcluster --data-dir="$DIR/etcd" \
    --listen-client-urls="http://127.0.0.1:$ETCD_PORT" --advertise-client-urls="http://127.0.0.1:$ETCD_PORT" \
    --listen-peer-urls="http://127.0.0.1:$ETCD_PEER_PORT" --initial-advertise-peer-urls="http://127.0.0.1:$ETCD_PEER_PORT" \
    --initial-cluster="simcluster=http://127.0.0.1:$ETCD_PEER_PORT" \
    --unsafe-no-fsync=true --quota-backend-bytes=1073741824 --log-level=warn
  wait_for etcd curl -sS --fail --max-time 2 "http://127.0.0.1:$ETCD_PORT/health"

  local pki="$DIR/pki"
  launch kube-apiserver \
    --etcd-servers="http://127.0.0.1:$ETCD_PORT" \
    --bind-address=127.0.0.1 --advertise-address=127.0.0.1 --secure-port="$API_PORT" \
    --tls-cert-file="$pki/apiserver.crt" --tls-private-key-file="$pki/apiserver.key" \
    --client-ca-file="$pki/ca.crt" \
    --requestheader-client-ca-file="$pki/ca.crt" --requestheader-allowed-names=front-proxy-client \
    --requestheader-username-headers=X-Remote-User --requestheader-group-headers=X-Remote-Group \
    --requestheader-extra-headers-prefix=X-Remote-Extra- \
    --proxy-client-cert-file="$pki/front-proxy-client.crt" --proxy-client-key-file="$pki/front-proxy-client.key" \
    --service-account-issuer=https://kubernetes.default.svc.cluster.local \
    --service-account-key-file="$pki/sa.pub" --service-account-signing-key-file="$pki/sa.key" \
    --service-cluster-ip-range=10.96.0.0/16 \
    --authorization-mode=RBAC \
    --endpoint-reconciler-type=none \
    --allow-privileged=true \
    --kubelet-preferred-address-types=InternalIP \
    --kubelet-certificate-authority="$pki/ca.crt" \
    --kubelet-client-certificate="$pki/apiserver-kubelet-client.crt" --kubelet-client-key="$pki/apiserver-kubelet-client.key" \
    --cert-dir="$DIR/certs/apiserver" \
    --profiling=false
  wait_for "kube-apiserver /readyz" api GET /readyz

  # Client-side rate limits: at their defaults (controller-manager 20 QPS /
  # 30 burst, scheduler 50 / 100) the controllers, not the apiserver, set the
  # pace once there are thousands of pods: 1,000 Deployments (1,500 pods) took
  # 272 s to be Ready with the apiserver using a third of a core, since each
  # pod costs the controller-manager several requests. These are kwokctl's
  # own settings for large simulated clusters (its DisableQPSLimits), so the
  # cluster answers as fast as the machine allows and a benchmark of the
  # agent (e2e/scale_test.go) measures the agent.
  launch kube-controller-manager \
    --kubeconfig="$DIR/kubeconfig" \
    --kube-api-qps=5000 --kube-api-burst=10000 \
    --authentication-kubeconfig="$DIR/kubeconfig" --authorization-kubeconfig="$DIR/kubeconfig" \
    --bind-address=127.0.0.1 --secure-port="$KCM_PORT" --cert-dir="$DIR/certs/kcm" \
    --controllers="$CONTROLLERS" \
    --service-account-private-key-file="$pki/sa.key" --root-ca-file="$pki/ca.crt" \
    --use-service-account-credentials=false \
    --leader-elect=false \
    --profiling=false
  launch kube-scheduler \
    --kubeconfig="$DIR/kubeconfig" \
    --kube-api-qps=5000 --kube-api-burst=10000 \
    --authentication-kubeconfig="$DIR/kubeconfig" --authorization-kubeconfig="$DIR/kubeconfig" \
    --bind-address=127.0.0.1 --secure-port="$SCHED_PORT" --cert-dir="$DIR/certs/scheduler" \
    --leader-elect=false \
    --profiling=false
  # kwok's Logs and ClusterLogs resources (a pod's log, or the logs of a
  # namespace's pods, served from a CRI-format file) are CRDs here, so a test
  # can point pods at files of its own.
  local crd
  for crd in logs clusterlogs; do
    api POST /apis/apiextensions.k8s.io/v1/customresourcedefinitions -H 'Content-Type: application/yaml' \
      --data-binary @"$CACHE/kwok-crds/kwok.x-k8s.io_$crd.yaml" >/dev/null \
      || die "creating kwok's $crd CRD failed"
    wait_for "kwok's $crd CRD established" crd_established "$crd.kwok.x-k8s.io"
  done
  # kwok follows a pod's log file with an inotify instance per reader, as a
  # kubelet does; a Linux user gets 128 by default, so past ~100 followed logs
  # kwok ends the others at once. Raise the limit where this may (root).
  local inotify=/proc/sys/fs/inotify/max_user_instances
  if [[ -w "$inotify" && "$(cat "$inotify")" -lt 8192 ]]; then
    echo 8192 >"$inotify" && log "raised fs.inotify.max_user_instances to 8192 (a followed pod log takes one)"
  fi
  launch kwok \
    --kubeconfig="$DIR/kubeconfig" \
    --config="$DIR/kwok.yaml" \
    --manage-all-nodes=true \
    --enable-crds=Logs,ClusterLogs \
    --tls-cert-file="$pki/kwok.crt" --tls-private-key-file="$pki/kwok.key" \
    --server-address="127.0.0.1:$KWOK_PORT"

  api POST /api/v1/nodes -H 'Content-Type: application/json' --data-binary "$(node_json)" >/dev/null \
    || die "creating node $NODE failed"
  wait_for "kube-controller-manager /healthz" https_ok "$KCM_PORT"
  wait_for "kube-scheduler /healthz" https_ok "$SCHED_PORT"
  wait_for "node $NODE Ready (kwok)" node_ready
  # Nothing here should taint the node (no node-lifecycle controller runs), but if a
  # not-ready taint is there, pods without tolerations would never schedule: clear it.
  local node
  node="$(api GET "/api/v1/nodes/$NODE")" || die "reading node $NODE failed"
  if [[ "$node" == *'node.kubernetes.io/not-ready'* ]]; then
    api PATCH "/api/v1/nodes/$NODE" -H 'Content-Type: application/merge-patch+json' \
      --data-binary '{"spec":{"taints":null}}' >/dev/null || die "clearing the taints of $NODE failed"
    log "cleared the not-ready taint of $NODE"
  fi
  node="$(api GET "/api/v1/nodes/$NODE")" || die "reading node $NODE failed"
  [[ "$node" != *'"taints"'* ]] || die "node $NODE still has taints: $node"
  wait_for "default ServiceAccount (controller-manager)" default_sa

  trap - EXIT
  log "cluster up in $((SECONDS - t_start))s; kubeconfig: $DIR/kubeconfig"
  print_env
}

status() {
  if running; then
    log "running; kubeconfig: $DIR/kubeconfig"
    local name pid
    while read -r name pid; do
      printf '%-24s pid %-8s rss %s kB\n' "$name" "$pid" "$(awk '/^VmRSS/{print $2}' "/proc/$pid/status")"
    done <"$DIR/pids"
    API_PORT="$(sed -n 's/^apiserver=//p' "$DIR/ports")"
    api GET /readyz >/dev/null && log "apiserver /readyz ok"
  else
    log "not running"
    return 1
  fi
}

check() { # build (cached) and run hack/simcluster/check against the running cluster
  running || die "not running (start it with: $0 start)"
  (cd "$HERE" && CGO_ENABLED=0 GOFLAGS=-buildvcs=false GOWORK=off go build -trimpath -o "$BIN/simcheck" ./check) \
    || die "building ./check failed"
  KUBECONFIG="$DIR/kubeconfig" "$BIN/simcheck" "$@"
}

case "${1:-}" in
  start) start ;;
  stop) stop_all ;;
  status) status ;;
  check) shift; check "$@" ;;
  env)
    running || die "not running (start it with: $0 start)"
    print_env
    ;;
  *)
    echo "usage: $0 start|stop|status|env|check [check flags]" >&2
    exit 2
    ;;
esac
