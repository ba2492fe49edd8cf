#!/bin/sh
# Runs the conformance corpus on bmv2 with p4lang tools that are ALREADY
# installed; it installs and builds nothing.
#
#   p4/run-stf.sh <dir with .stf files> [<build dir>]
#
# Make the .stf files (one per corpus case) with:
#   P4_STF_OUT=<dir> cargo test -p dataplane-user --test p4 corpus_loads_and_becomes_stf_tests
#
# Needs on PATH: p4c (with the bmv2 back end, p4c-bm2-ss), simple_switch,
# simple_switch_CLI, python3 with scapy; and BMV2STF=<path to p4c's
# backends/bmv2/bmv2stf.py> (p4c's STF runner, in p4c's source tree).
# Exit status: 0 all passed, 1 a test failed, 77 tools missing (skipped).
set -eu

here=$(cd "$(dirname "$0")" && pwd)
stf_dir=${1:?usage: p4/run-stf.sh <dir with .stf files> [<build dir>]}
build=${2:-${TMPDIR:-/tmp}/dataplane-p4-build}

missing=""
for tool in p4c simple_switch simple_switch_CLI python3; do
    command -v "$tool" >/dev/null 2>&1 || missing="$missing $tool"
done
if [ -z "${BMV2STF:-}" ] || [ ! -f "${BMV2STF:-}" ]; then
    missing="$missing BMV2STF(=path/to/p4c/backends/bmv2/bmv2stf.py)"
fi
if [ -n "$missing" ]; then
    echo "p4/run-stf.sh: SKIPPED, missing:$missing"
    echo "  install p4c (https://github.com/p4lang/p4c, bmv2 back end) and bmv2"
    echo "  (https://github.com/p4lang/behavioral-model: simple_switch, simple_switch_CLI),"
    echo "  and point BMV2STF at p4c's backends/bmv2/bmv2stf.py"
    exit 77
fi

mkdir -p "$build"
echo "compiling p4/v1model/dataplane.p4 with p4c (bmv2, v1model)"
p4c --target bmv2 --arch v1model -o "$build" "$here/v1model/dataplane.p4"
json="$build/dataplane.json"

pass=0
fail=0
cd "$build"
for stf in "$stf_dir"/*.stf; do
    name=$(basename "$stf" .stf)
    if python3 "$BMV2STF" "$json" "$stf" >"$build/$name.log" 2>&1; then
        echo "  ok    $name"
        pass=$((pass + 1))
    else
        echo "  FAIL  $name (log: $build/$name.log)"
        fail=$((fail + 1))
    fi
done
echo "bmv2 corpus: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
