#!/usr/bin/env bash
# A throwaway PostgreSQL cluster on loopback for the tests: tests/run.sh uses it to run the
# suite a second time with PostgreSQL as the store.
#
#   cluster.sh start DIR   installs PostgreSQL with apt-get when its binaries are missing
#                          (as root), initdb's a cluster in DIR/data, starts it on a free
#                          loopback port and prints its URL (user `rummy`, database
#                          `postgres`; the tests create a database per test through it)
#   cluster.sh start DIR [durable] [tls]
#                          durable: with PostgreSQL's own durability settings (fsync,
#                          synchronous commits): for benchmarks; the tests skip them.
#                          tls: the server takes TCP connections over TLS only, with a
#                          certificate made for 127.0.0.1 (DIR/root.crt), and the URL asks
#                          libpq to verify it (sslmode=verify-full): what a team's managed
#                          PostgreSQL asks of rummy
#   cluster.sh stop DIR    stops that cluster (DIR itself is the caller's to remove)
#
# PostgreSQL refuses to run as root: as root the cluster belongs to the `postgres` user
# (created by the Debian package), and DIR is handed to it.
set -euo pipefail

command=${1:-}
dir=${2:-}
durable=
tls=
for option in "${@:3}"; do
  case "$option" in
    durable) durable=1 ;;
    tls) tls=1 ;;
    *) echo "unknown option: $option" >&2; exit 2 ;;
  esac
done
if [ -z "$command" ] || [ -z "$dir" ]; then
  echo "usage: $0 start DIR [durable] [tls] | stop DIR" >&2
  exit 2
fi

# The directory of the server binaries: pg_config's, else Debian's newest, else the PATH's.
find_bindir() {
  local candidate
  if command -v pg_config >/dev/null 2>&1; then
    candidate=$(pg_config --bindir 2>/dev/null || true)
    [ -x "$candidate/initdb" ] && { echo "$candidate"; return 0; }
  fi
  candidate=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1 || true)
  [ -n "$candidate" ] && [ -x "$candidate/initdb" ] && { echo "$candidate"; return 0; }
  candidate=$(command -v initdb 2>/dev/null || true)
  [ -n "$candidate" ] && { dirname "$candidate"; return 0; }
  return 1
}

as_cluster_user() {
  if [ "$(id -u)" = 0 ]; then
    runuser -u postgres -- "$@"
  else
    "$@"
  fi
}

install_postgres() {
  if [ "$(id -u)" != 0 ] || ! command -v apt-get >/dev/null 2>&1; then
    echo "PostgreSQL is not installed (not root or no apt-get: install it yourself)" >&2
    return 1
  fi
  echo "installing PostgreSQL with apt-get" >&2
  DEBIAN_FRONTEND=noninteractive apt-get update -qq >&2 || return 1
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends postgresql >&2
}

# A self-signed certificate for 127.0.0.1 in the cluster's data directory (the server's key
# and certificate), its copy DIR/root.crt (what clients trust), and host connections
# accepted over TLS only.
enable_tls() {
  if ! command -v openssl >/dev/null 2>&1; then
    [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1 \
      && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends openssl >&2
  fi
  command -v openssl >/dev/null 2>&1 || { echo "tls needs openssl" >&2; return 1; }
  openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj /CN=127.0.0.1 \
    -addext subjectAltName=IP:127.0.0.1 -keyout "$dir/data/server.key" \
    -out "$dir/data/server.crt" >"$dir/openssl.log" 2>&1 || { cat "$dir/openssl.log" >&2; return 1; }
  chmod 600 "$dir/data/server.key"
  cp "$dir/data/server.crt" "$dir/root.crt"
  chmod 644 "$dir/root.crt"
  if [ "$(id -u)" = 0 ]; then
    chown postgres "$dir/data/server.key" "$dir/data/server.crt"
  fi
  echo "ssl = on" >>"$dir/data/postgresql.conf"
  printf 'local all all trust\nhostssl all all 127.0.0.1/32 trust\n' >"$dir/data/pg_hba.conf"
}

free_port() {
  python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])' 2>/dev/null \
    || echo $((20000 + RANDOM % 20000))
}

case "$command" in
  start)
    bindir=$(find_bindir) || { install_postgres && bindir=$(find_bindir); } || {
      echo "no PostgreSQL server binaries (initdb) after the install" >&2
      exit 1
    }
    mkdir -p "$dir"
    if [ "$(id -u)" = 0 ]; then
      id postgres >/dev/null 2>&1 || useradd --system --no-create-home postgres
      chown postgres "$dir"
    fi
    as_cluster_user "$bindir/initdb" -D "$dir/data" -U rummy --auth=trust --encoding=UTF8 \
      --locale=C >"$dir/initdb.log" 2>&1 || { cat "$dir/initdb.log" >&2; exit 1; }
    [ -n "$tls" ] && { enable_tls || exit 1; }
    port=$(free_port)
    # Throwaway data: nothing waits for the disk, unless asked to.
    fast="-c fsync=off -c synchronous_commit=off -c full_page_writes=off"
    [ -n "$durable" ] && fast=""
    # Sockets in DIR, not /var/run/postgresql: nothing outside DIR is needed or touched.
    as_cluster_user "$bindir/pg_ctl" -D "$dir/data" -l "$dir/server.log" -w -t 60 start \
      -o "-h 127.0.0.1 -p $port -k $dir -c max_connections=400 $fast" >&2 \
      || { cat "$dir/server.log" >&2; exit 1; }
    if [ -n "$tls" ]; then
      echo "postgres://rummy@127.0.0.1:$port/postgres?sslmode=verify-full&sslrootcert=$dir/root.crt"
    else
      echo "postgres://rummy@127.0.0.1:$port/postgres"
    fi
    ;;
  stop)
    bindir=$(find_bindir) || exit 0
    [ -d "$dir/data" ] || exit 0
    as_cluster_user "$bindir/pg_ctl" -D "$dir/data" -m fast -w stop >&2 || true
    ;;
  *)
    echo "usage: $0 start|stop DIR" >&2
    exit 2
    ;;
esac
