#!/usr/bin/env bash
# Make the JVM side of mxkv runnable: a Clojure jar, a JDK, and the bridge's
# Java sources (clojure/java) compiled into clojure/classes when they changed.
# Installs Debian's `clojure` package (and a headless JDK) when missing and we
# are root with apt-get; otherwise says what to install.
set -euo pipefail
cd "$(dirname "$0")/.."
VENV=${VENV:-.venv}
PY=${PY:-$VENV/bin/python}

need_apt() {
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    echo "ensure-clojure: installing $*"
    DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends "$@" \
      || { DEBIAN_FRONTEND=noninteractive apt-get update -q && \
           DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends "$@"; }
  else
    return 1
  fi
}

if ! command -v javac >/dev/null 2>&1; then
  need_apt default-jdk-headless || {
    echo "ensure-clojure: no JDK found. Install one (e.g. apt-get install -y default-jdk-headless) and rerun." >&2
    exit 1; }
fi

have_clojure() {
  [ -n "${MXKV_CLOJURE_JAR:-}" ] && return 0
  [ -f /usr/share/java/clojure.jar ] && [ -f /usr/share/java/spec.alpha.jar ] && return 0
  ls "$HOME"/.m2/repository/org/clojure/clojure/*/clojure-*.jar >/dev/null 2>&1 && return 0
  return 1
}

if ! have_clojure; then
  need_apt clojure || {
    echo "ensure-clojure: no Clojure jar found. Install Debian's package (apt-get install -y clojure)," >&2
    echo "  or the Clojure CLI (https://clojure.org/guides/install_clojure), or set MXKV_CLOJURE_JAR" >&2
    echo "  to clojure.jar:spec.alpha.jar:core.specs.alpha.jar." >&2
    exit 1; }
fi

if [ ! -x "$PY" ]; then
  PY=python3
fi
# Compiles only when a Java source is newer than the last build.
PYTHONPATH="$PWD/python${PYTHONPATH:+:$PYTHONPATH}" "$PY" -m mxkv.cli build 2>&1 \
  || { echo "ensure-clojure: compiling clojure/java failed" >&2; exit 1; }
echo "ensure-clojure: ok ($(java -version 2>&1 | head -1); classes in clojure/classes)"
