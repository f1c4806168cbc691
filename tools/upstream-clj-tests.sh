#!/usr/bin/env bash
# Run a copy of clojure-mxnet's own test directory against mxkv.
#
#   bash tools/upstream-clj-tests.sh DIR [FILE-REGEX...]
#
# DIR holds the test tree (org/apache/clojure_mxnet/*_test.clj and its
# test_util.clj), copied from clojure-mxnet 1.9.1 somewhere outside this
# repository, e.g.
#   mkdir -p /tmp/upstream-clj-tests
#   cp -r <mxnet-1.9.1>/contrib/clojure-package/test/org /tmp/upstream-clj-tests/
#   bash tools/upstream-clj-tests.sh /tmp/upstream-clj-tests 'ndarray_test|shape_test'
# Each file is loaded form by form (requires of namespaces mxkv does not
# provide are dropped and listed); see clojure/src/mxkv/upstream_tests.clj.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
if [ $# -lt 1 ] || [ ! -d "$1" ]; then
  echo "usage: $0 DIR [FILE-REGEX...]  (DIR: a copy of clojure-mxnet's test directory)" >&2
  exit 2
fi
DIR="$(cd "$1" && pwd)"
shift
exec "$ROOT/.venv/bin/mxkv" clj -m mxkv.upstream-tests "$DIR" "$@"
