#!/usr/bin/env bash
# The one test command: installs nginx and node (with apt-get, as root), the two ACP client
# SDKs the editor tests drive `rummy acp` with (`npm ci` in tests/acp; a venv in
# tests/acp/.venv with tests/acp/requirements.txt), and starts the real local LLM
# (SmolLM2-135M behind an OpenAI-compatible server on loopback, installed once and cached
# under ~/.cache/rummy-llm), exports its base URL as RUMMY_TEST_LLM_URL, runs `cargo test
# --locked --no-fail-fast --all-targets` (extra arguments are passed on to it), then the tests that need
# those: the web console in Debian's chromium driven by Playwright for Python (apt-get
# chromium; a venv in tests/console/.venv with tests/console/requirements.txt; `...
# console_browser:: -- --ignored`, the part through nginx only when nginx is there), rummy behind the real nginx (`cargo test --locked --test it proxy:: --
# --ignored`), `rummy acp` driven by the ACP TypeScript SDK (`... acp::ts:: -- --ignored`), the
# Node.js example plugin (`... plugin_processes::node:: -- --ignored`), console sign-in through
# OpenID Connect providers on loopback (`npm ci` in tests/oidc; `... oidc:: -- --ignored`) and
# by the ACP Python SDK (`... acp::py:: -- --ignored`), the OpenTelemetry export to an OTLP receiver in tests/otel/.venv (`... otlp:: -- --ignored`), the shared-run story with the console
# (`... acp::console_story:: -- --ignored`, with both SDKs and chromium) and the end-to-end tests against the
# LLM (`... e2e:: -- --ignored`); all of them are
# #[ignore]d so that a plain `cargo test` never counts them as passed. As root it also runs
# the server as the image does, as nobody on a read-only root (`... container:: --
# --ignored`, with util-linux's unshare and setpriv). Then it runs the
# integration suite and the unit tests (their stores, TestDb) a second time with
# PostgreSQL as the store: against RUMMY_TEST_DATABASE_URL when it is set, else against a
# throwaway cluster it installs (apt-get, as root, when missing), initdb's in a temporary
# directory and starts on a free loopback port, taking connections over verified TLS only
# (tests/pg/cluster.sh ... tls), each test in a database of its own. That pass also runs
# the tests of PostgreSQL alone (several instances on one database, migrations, a lost
# session: `#[ignore = "needs PostgreSQL: ..."]`, so that a plain `cargo test` never counts
# them as passed) with `--include-ignored`, skipping only the nginx and LLM tests above. It
# stops the LLM and the cluster again, removes the cluster. Last it builds the book under
# docs/ with mdbook and checks its links and anchors with lychee (tests/docs/book.sh: both
# pinned, installed once under ~/.cache/rummy-docs), and exits with the first failing status
# of the runs, naming at the end each failing run and the tests it failed.
#
# When nginx, node, the Python SDK, chromium, Playwright, the LLM, PostgreSQL or the book's
# tools cannot be installed or started (no network, not root, no python3), this says so
# loudly and runs every other test; the tests that need it do not run. Under CI=true that
# fails the run (after the tests ran).
#
# Environment:
#   RUMMY_TEST_LLM_URL      already set: use that server, start nothing
#   RUMMY_TEST_NO_LLM=1     do not start the LLM (not allowed under CI=true)
#   RUMMY_LLM_START_TIMEOUT seconds allowed for install + start (default 2400)
#   RUMMY_LLM_PORT, RUMMY_LLM_HOME   passed to tests/llm/serve-smollm.sh
#   RUMMY_TEST_DATABASE_URL a PostgreSQL server (postgres://user@host:port/db, the user may
#                           create databases): the second run uses it, starts no cluster
set -uo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.." || exit 2
SERVE=tests/llm/serve-smollm.sh
LLM_HOME=${RUMMY_LLM_HOME:-$HOME/.cache/rummy-llm}
# The served model's context window (serve-smollm.sh --n_ctx); the API does not report it.
LLM_CONTEXT=8192

started_llm=0
llm_problem=""
nginx_problem=""
postgres_problem=""
pg_cluster=""
LLM_CONSEQUENCE="The end-to-end tests against the real LLM will NOT run."
NGINX_CONSEQUENCE="The tests of rummy behind the real nginx (tests/it/proxy.rs) will NOT run."
node_problem=""
NODE_CONSEQUENCE="The tests of rummy acp with the ACP TypeScript SDK (tests/it/acp.rs, acp::ts::), the three-client story (acp::three_clients::, acp::console_story::) and of the Node.js example plugin (plugin_processes::node::) will NOT run."
console_problem=""
CONSOLE_CONSEQUENCE="The tests of the web console in a real browser (tests/it/console_browser.rs, acp::console_story::) will NOT run."
python_sdk_problem=""
otlp_problem=""
OTLP_CONSEQUENCE="The test of the OpenTelemetry export against a real OTLP receiver (tests/it/otlp.rs, otlp::) will NOT run."
PYTHON_SDK_CONSEQUENCE="The tests of rummy acp with the ACP Python SDK (tests/it/acp.rs, acp::py::) and the three-client story (acp::three_clients::, acp::console_story::) will NOT run."
container_problem=""
CONTAINER_CONSEQUENCE="The test of the server as the image runs it, unprivileged on a read-only root (tests/it/container.rs), will NOT run."
oidc_problem=""
OIDC_CONSEQUENCE="The tests of console sign-in through an OpenID Connect provider (tests/it/oidc.rs, oidc::, and console_browser::oidc::) will NOT run."
docs_problem=""
DOCS_CONSEQUENCE="The book under docs/ will NOT be built, nor its links checked (tests/docs/book.sh)."
POSTGRES_CONSEQUENCE="The integration suite will NOT run against PostgreSQL, nor the tests of PostgreSQL alone (tests/it/instances.rs ...)."

# shout PROBLEM CONSEQUENCE
shout() {
  {
    echo
    echo "######################################################################"
    echo "## $1"
    echo "## $2"
    echo "######################################################################"
    echo
  } >&2
}

stop_llm() {
  if [ "$started_llm" = 1 ]; then
    bash "$SERVE" stop || true
    started_llm=0
  fi
}
stop_postgres() {
  if [ -n "$pg_cluster" ]; then
    bash tests/pg/cluster.sh stop "$pg_cluster" || true
    rm -rf "$pg_cluster"
    pg_cluster=""
  fi
}

stop_all() {
  stop_llm
  stop_postgres
}
trap stop_all EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

as_root() {
  [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1
}

apt_install() {
  echo "installing with apt-get: $*" >&2
  if [ -z "${apt_updated:-}" ]; then
    DEBIAN_FRONTEND=noninteractive apt-get update -qq >&2 || return 1
    apt_updated=1
  fi
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "$@" >&2
}

# What the one-time install needs: python3 with venv (Debian splits it into python3-venv),
# a C++ toolchain to build llama.cpp, and curl for the health checks.
ensure_install_prerequisites() {
  local missing=()
  command -v curl >/dev/null 2>&1 || missing+=(curl ca-certificates)
  if ! command -v python3 >/dev/null 2>&1; then
    missing+=(python3 python3-venv)
  elif ! python3 -c 'import venv, ensurepip' >/dev/null 2>&1; then
    missing+=(python3-venv)
  fi
  { command -v c++ >/dev/null 2>&1 && command -v make >/dev/null 2>&1; } || missing+=(g++ make)
  [ ${#missing[@]} -eq 0 ] && return 0
  if ! as_root; then
    echo "missing for the LLM install: ${missing[*]} (not root or no apt-get: install them yourself)" >&2
    return 1
  fi
  apt_install "${missing[@]}"
}

chromium_installed() {
  [ -x /usr/bin/chromium ] || [ -x /usr/bin/chromium-browser ]
}

# Debian's chromium (apt-get; never a browser Playwright would download) and python3 with
# venv, then a venv in tests/console/.venv holding Playwright for Python at the versions
# tests/console/requirements.txt pins; the test points Playwright at the system chromium.
ensure_console_browser() {
  local missing=()
  chromium_installed || missing+=(chromium fonts-dejavu-core)
  if ! command -v python3 >/dev/null 2>&1 || ! python3 -c 'import venv, ensurepip' >/dev/null 2>&1; then
    missing+=(python3 python3-venv)
  fi
  if [ ${#missing[@]} -gt 0 ]; then
    if ! as_root; then
      console_problem="${missing[*]} not installed (not root or no apt-get: install them yourself)."
      return 1
    fi
    if ! apt_install "${missing[@]}" || ! chromium_installed; then
      console_problem="${missing[*]} could not be installed with apt-get: see the messages above."
      return 1
    fi
  fi
  if ! { [ -x tests/console/.venv/bin/python ] || python3 -m venv tests/console/.venv >&2; }; then
    console_problem="python3 -m venv tests/console/.venv failed: see the messages above."
    return 1
  fi
  if ! tests/console/.venv/bin/python -m pip install --quiet --disable-pip-version-check \
    -r tests/console/requirements.txt >&2; then
    console_problem="pip install -r tests/console/requirements.txt failed (no network?): see the messages above."
    return 1
  fi
}

nginx_installed() {
  command -v nginx >/dev/null 2>&1 || [ -x /usr/sbin/nginx ]
}

# The proxy tests run nginx themselves, as an ordinary child process; only the binary is
# needed (a Debian package starts no service without systemd).
ensure_nginx() {
  nginx_installed && return 0
  if ! as_root; then
    nginx_problem="nginx is not installed (not root or no apt-get: install it yourself)."
    return 1
  fi
  if ! apt_install nginx || ! nginx_installed; then
    nginx_problem="nginx could not be installed with apt-get: see the messages above."
    return 1
  fi
}

# What the image's conditions are made with: root, and util-linux's unshare and setpriv.
ensure_container_tools() {
  if [ "$(id -u)" != 0 ]; then
    container_problem="Not root: a read-only root in a mount namespace and a drop to nobody need root."
    return 1
  fi
  if ! command -v unshare >/dev/null 2>&1 || ! command -v setpriv >/dev/null 2>&1; then
    if ! as_root || ! apt_install util-linux || ! command -v setpriv >/dev/null 2>&1; then
      container_problem="unshare and setpriv (util-linux) are not installed and could not be."
      return 1
    fi
  fi
}

# node and npm for the ACP client SDK, then the SDK at the version tests/acp/package-lock.json
# pins.
ensure_node() {
  if ! command -v node >/dev/null 2>&1 || ! command -v npm >/dev/null 2>&1; then
    if ! as_root; then
      node_problem="node and npm are not installed (not root or no apt-get: install them yourself)."
      return 1
    fi
    if ! apt_install nodejs npm || ! command -v npm >/dev/null 2>&1; then
      node_problem="node and npm could not be installed with apt-get: see the messages above."
      return 1
    fi
  fi
  if ! (cd tests/acp && npm ci --no-audit --no-fund >&2); then
    node_problem="npm ci in tests/acp failed (no network?): see the messages above."
    return 1
  fi
}

# python3 with venv, then a venv in tests/acp/.venv holding the ACP Python SDK at the versions
# tests/acp/requirements.txt pins.
ensure_python_sdk() {
  if ! command -v python3 >/dev/null 2>&1 || ! python3 -c 'import venv, ensurepip' >/dev/null 2>&1; then
    if ! as_root; then
      python_sdk_problem="python3 with venv is not installed (not root or no apt-get: install python3-venv yourself)."
      return 1
    fi
    if ! apt_install python3 python3-venv || ! python3 -c 'import venv, ensurepip' >/dev/null 2>&1; then
      python_sdk_problem="python3 with venv could not be installed with apt-get: see the messages above."
      return 1
    fi
  fi
  if ! { [ -x tests/acp/.venv/bin/python ] || python3 -m venv tests/acp/.venv >&2; }; then
    python_sdk_problem="python3 -m venv tests/acp/.venv failed: see the messages above."
    return 1
  fi
  if ! tests/acp/.venv/bin/python -m pip install --quiet --disable-pip-version-check \
    -r tests/acp/requirements.txt >&2; then
    python_sdk_problem="pip install -r tests/acp/requirements.txt failed (no network?): see the messages above."
    return 1
  fi
}

# The OpenID Connect providers on loopback of tests/oidc (panva's oidc-provider, jose) at the
# versions tests/oidc/package-lock.json pins, from npm's cache once fetched.
ensure_oidc_provider() {
  if [ -n "$node_problem" ]; then
    oidc_problem="node and npm are missing: see above."
    return 1
  fi
  if ! (cd tests/oidc && npm ci --no-audit --no-fund --prefer-offline >&2); then
    oidc_problem="npm ci in tests/oidc failed (no network?): see the messages above."
    return 1
  fi
}

# python3 with venv, then a venv in tests/otel/.venv holding OpenTelemetry's protobuf messages
# for the OTLP receiver of tests/otel/receiver.py, at the versions tests/otel/requirements.txt pins.
ensure_otlp_receiver() {
  if ! python3 -c 'import venv, ensurepip' >/dev/null 2>&1; then
    otlp_problem="python3 with venv is not installed (the ACP Python SDK's step installs it as root)."
    return 1
  fi
  if ! { [ -x tests/otel/.venv/bin/python ] || python3 -m venv tests/otel/.venv >&2; }; then
    otlp_problem="python3 -m venv tests/otel/.venv failed: see the messages above."
    return 1
  fi
  if ! tests/otel/.venv/bin/python -m pip install --quiet --disable-pip-version-check \
    -r tests/otel/requirements.txt >&2; then
    otlp_problem="pip install -r tests/otel/requirements.txt failed (no network?): see the messages above."
    return 1
  fi
}

llm_installed() {
  "$LLM_HOME/venv/bin/python" -c 'import llama_cpp.server' >/dev/null 2>&1
}

start_llm() {
  if [ -n "${RUMMY_TEST_LLM_URL:-}" ]; then
    echo "using the LLM at RUMMY_TEST_LLM_URL=$RUMMY_TEST_LLM_URL" >&2
    return 0
  fi
  if [ "${RUMMY_TEST_NO_LLM:-}" = 1 ]; then
    llm_problem="RUMMY_TEST_NO_LLM=1: the real LLM was not started."
    return 1
  fi
  if ! command -v curl >/dev/null 2>&1 || ! llm_installed; then
    if ! ensure_install_prerequisites; then
      llm_problem="The real LLM cannot be installed: prerequisites are missing (see above)."
      return 1
    fi
  fi
  local already_running=0
  bash "$SERVE" status && already_running=1
  local url started_at=$SECONDS
  if ! url=$(timeout -k 10 "${RUMMY_LLM_START_TIMEOUT:-2400}" bash "$SERVE" start); then
    [ -f "$LLM_HOME/server.pid" ] && [ "$already_running" = 0 ] && started_llm=1
    llm_problem="The real LLM did not install or start: see the messages above and $LLM_HOME/server.log."
    return 1
  fi
  [ "$already_running" = 0 ] && started_llm=1
  echo "real LLM ready at $url after $((SECONDS - started_at)) s" >&2
  export RUMMY_TEST_LLM_URL=$url
  export RUMMY_TEST_LLM_CONTEXT=$LLM_CONTEXT
}

# The PostgreSQL server of the second run; the first run is SQLite's whatever is set.
pg_url=${RUMMY_TEST_DATABASE_URL:-}
unset RUMMY_TEST_DATABASE_URL

# Sets RUMMY_TEST_DATABASE_URL, starting a throwaway cluster when none is configured.
start_postgres() {
  if [ -n "$pg_url" ]; then
    echo "using the PostgreSQL server at RUMMY_TEST_DATABASE_URL" >&2
    export RUMMY_TEST_DATABASE_URL=$pg_url
    return 0
  fi
  pg_cluster=$(mktemp -d "${TMPDIR:-/tmp}/rummy-pg.XXXXXX") || return 1
  local url
  if ! url=$(bash tests/pg/cluster.sh start "$pg_cluster" tls); then
    postgres_problem="No PostgreSQL cluster could be installed or started: see the messages above."
    return 1
  fi
  export RUMMY_TEST_DATABASE_URL=$url
}

if ! ensure_nginx; then
  shout "$nginx_problem" "$NGINX_CONSEQUENCE"
fi
if ! ensure_container_tools; then
  shout "$container_problem" "$CONTAINER_CONSEQUENCE"
fi
if ! ensure_node; then
  shout "$node_problem" "$NODE_CONSEQUENCE"
fi
if ! ensure_oidc_provider; then
  shout "$oidc_problem" "$OIDC_CONSEQUENCE"
fi
if ! ensure_python_sdk; then
  shout "$python_sdk_problem" "$PYTHON_SDK_CONSEQUENCE"
fi
if ! ensure_otlp_receiver; then
  shout "$otlp_problem" "$OTLP_CONSEQUENCE"
fi
if ! ensure_console_browser; then
  shout "$console_problem" "$CONSOLE_CONSEQUENCE"
fi
if ! start_llm; then
  shout "$llm_problem" "$LLM_CONSEQUENCE"
fi

# The first failing status of the passes, and what each failing pass failed, for the end.
status=0
failed_passes=()

# run_pass COMMAND...: runs one pass of the tests. A failing pass keeps the run's first
# failing status and is named again at the end with the tests it failed, since a long run's
# log is often read from its tail.
run_pass() {
  local out
  out=$(mktemp "${TMPDIR:-/tmp}/rummy-pass.XXXXXX") || return
  "$@" | tee "$out"
  local pass_status=${PIPESTATUS[0]}
  if [ "$pass_status" != 0 ]; then
    [ "$status" = 0 ] && status=$pass_status
    local store=SQLite
    [ -n "${RUMMY_TEST_DATABASE_URL:-}" ] && store=PostgreSQL
    failed_passes+=("exit $pass_status on $store: $*")
    while read -r failed_test; do
      failed_passes+=("    $failed_test")
    done < <(sed -n 's/^test \(.*\) \.\.\. FAILED$/\1/p' "$out")
  fi
  rm -f "$out"
}

run_pass cargo test --locked --no-fail-fast --all-targets "$@"
if [ -z "$nginx_problem" ]; then
  run_pass cargo test --locked --test it proxy:: -- --ignored
fi
if [ -z "$container_problem" ]; then
  run_pass cargo test --locked --test it container:: -- --ignored
fi
if [ -z "$node_problem" ]; then
  run_pass cargo test --locked --test it -- --ignored acp::ts:: acp::personal_tokens::ts::
  run_pass cargo test --locked --test it plugin_processes::node:: -- --ignored
fi
if [ -z "$oidc_problem" ]; then
  run_pass cargo test --locked --test it oidc:: -- --ignored --skip console_browser::
fi
if [ -z "$otlp_problem" ]; then
  run_pass cargo test --locked --test it otlp:: -- --ignored
fi
if [ -z "$python_sdk_problem" ]; then
  run_pass cargo test --locked --test it -- --ignored acp::py:: acp::personal_tokens::py::
fi
if [ -z "$node_problem" ] && [ -z "$python_sdk_problem" ]; then
  # The three-client story drives one editor with each SDK.
  run_pass cargo test --locked --test it acp::three_clients:: -- --ignored
fi
if [ -z "$node_problem" ] && [ -z "$python_sdk_problem" ] && [ -z "$console_problem" ]; then
  # The shared-run story with the console drives both SDKs and chromium.
  run_pass cargo test --locked --test it acp::console_story:: -- --ignored
fi
if [ -z "$console_problem" ]; then
  # The console through the shipped nginx config needs nginx too (shouted above).
  skip_proxy=()
  [ -n "$nginx_problem" ] && skip_proxy=(--skip console_browser::the_console_works_through_the_shipped_nginx_config)
  [ -n "$oidc_problem" ] && skip_proxy+=(--skip console_browser::oidc::)
  run_pass cargo test --locked --test it console_browser:: -- --ignored "${skip_proxy[@]}"
fi
if [ -n "${RUMMY_TEST_LLM_URL:-}" ]; then
  # The editor's session on the real model needs node as the ACP tests do (shouted above).
  skip_editor=()
  [ -n "$node_problem" ] && skip_editor=(--skip e2e::an_editor_session_on_a_real_model)
  run_pass cargo test --locked --test it e2e:: -- --ignored "${skip_editor[@]}"
fi
stop_llm
if start_postgres; then
  echo "running the integration suite and the tests of PostgreSQL alone against PostgreSQL" >&2
  skip_oidc=()
  [ -n "$oidc_problem" ] && skip_oidc=(--skip oidc::)
  run_pass cargo test --locked --test it -- --include-ignored --skip proxy:: --skip e2e:: --skip acp:: --skip container:: --skip console_browser:: --skip plugin_processes::node:: "${skip_oidc[@]}"
  run_pass cargo test --locked --lib -- --include-ignored
fi
stop_postgres
if bash tests/docs/book.sh install; then
  run_pass bash tests/docs/book.sh check
else
  docs_problem="mdbook or lychee could not be installed (cargo install, pip): see the messages above."
fi

# missing PROBLEM CONSEQUENCE: repeats a problem at the end, where it is seen; under CI=true
# a run that left tests out fails.
missing() {
  [ -n "$1" ] || return 0
  shout "$1" "$2"
  if [ "${CI:-}" = true ] && [ "$status" = 0 ]; then
    echo "CI=true: a run that leaves tests out is a failure." >&2
    status=1
  fi
}
missing "$nginx_problem" "$NGINX_CONSEQUENCE"
missing "$container_problem" "$CONTAINER_CONSEQUENCE"
missing "$node_problem" "$NODE_CONSEQUENCE"
missing "$python_sdk_problem" "$PYTHON_SDK_CONSEQUENCE"
missing "$otlp_problem" "$OTLP_CONSEQUENCE"
missing "$oidc_problem" "$OIDC_CONSEQUENCE"
missing "$console_problem" "$CONSOLE_CONSEQUENCE"
missing "$llm_problem" "$LLM_CONSEQUENCE"
missing "$postgres_problem" "$POSTGRES_CONSEQUENCE"
missing "$docs_problem" "$DOCS_CONSEQUENCE"
if [ "${#failed_passes[@]}" != 0 ]; then
  {
    echo
    echo "######################################################################"
    echo "## Failed passes and the tests they failed:"
    printf '## %s\n' "${failed_passes[@]}"
    echo "######################################################################"
  } >&2
fi
exit "$status"
