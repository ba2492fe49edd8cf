#!/bin/sh
# Runs the conformance corpus on bmv2 with p4lang tools that are ALREADY
# installed; it installs and builds nothing.
#
#   p4/run-stf.sh <dir with .stf files> [<work dir>]
#
# Make the .stf files (one per corpus case) with:
#   P4_STF_OUT=<dir> cargo test -p dataplane-p4 --test p4 corpus_loads_and_becomes_stf_tests
# (`cargo xtask p4 test` does all of it.)
#
# Needs: simple_switch and simple_switch_CLI on PATH, python3 with scapy,
# and two directories of a p4c build (https://github.com/p4lang/p4c):
#   P4C_SRC    p4c's source tree (backends/bmv2/run-bmv2-test.py, tools/)
#   P4C_BUILD  p4c's build directory (p4c-bm2-ss, and a config.h that
#              defines HAVE_SIMPLE_SWITCH: configure p4c after installing
#              bmv2)
# Each case is run by p4c's own STF runner (run-bmv2-test.py), which
# compiles p4/v1model/dataplane.p4 with p4c-bm2-ss and runs simple_switch
# with 8 priority queues (the program maps traffic classes to queues).
# Its count lines (`cargo xtask test` reads them):
#   bmv2: P of N STF cases passed
#   bmv2 CLI files: L of M loaded into simple_switch   (or: SKIPPED, why)
# Exit status: 0 all passed, 1 a test failed (or no .stf files), 77 tools
# missing (skipped).
set -eu

here=$(cd "$(dirname "$0")" && pwd)
stf_dir=${1:?usage: p4/run-stf.sh <dir with .stf files> [<work dir>]}
work=${2:-${TMPDIR:-/tmp}/dataplane-p4-stf}

missing=""
for tool in simple_switch simple_switch_CLI python3; do
    command -v "$tool" >/dev/null 2>&1 || missing="$missing $tool"
done
runner="${P4C_SRC:-}/backends/bmv2/run-bmv2-test.py"
if [ -z "${P4C_SRC:-}" ] || [ ! -f "$runner" ]; then
    missing="$missing P4C_SRC(=p4c source tree with backends/bmv2/run-bmv2-test.py)"
fi
if [ -z "${P4C_BUILD:-}" ] || [ ! -x "${P4C_BUILD:-}/p4c-bm2-ss" ]; then
    missing="$missing P4C_BUILD(=p4c build directory with p4c-bm2-ss)"
elif ! grep -q "define HAVE_SIMPLE_SWITCH" "$P4C_BUILD/config.h" 2>/dev/null; then
    missing="$missing P4C_BUILD/config.h(HAVE_SIMPLE_SWITCH: configure p4c after installing bmv2)"
fi
if [ -n "$missing" ]; then
    echo "p4/run-stf.sh: SKIPPED, missing:$missing"
    echo "  install p4c (https://github.com/p4lang/p4c, bmv2 back end) and bmv2"
    echo "  (https://github.com/p4lang/behavioral-model: simple_switch, simple_switch_CLI),"
    echo "  then set P4C_SRC and P4C_BUILD"
    exit 77
fi

mkdir -p "$work"
pass=0
fail=0
total=0
cd "$work"
for stf in "$stf_dir"/*.stf; do
    [ -f "$stf" ] || continue
    total=$((total + 1))
    name=$(basename "$stf" .stf)
    if python3 "$runner" "$P4C_SRC" "$here/v1model/dataplane.p4" -tf "$stf" -bd "$P4C_BUILD" \
        --target-specific-switch-arg="--priority-queues 8" >"$work/$name.log" 2>&1; then
        echo "  ok    $name"
        pass=$((pass + 1))
    else
        echo "  FAIL  $name (log: $work/$name.log)"
        fail=$((fail + 1))
    fi
done
echo "bmv2: $pass of $total STF cases passed"
if [ "$total" -eq 0 ]; then
    echo "  FAIL  no .stf files in $stf_dir"
    fail=1
fi

# The generated simple_switch_CLI files (golden outputs of `dataplane p4
# entries --target bmv2`) must load into a fresh simple_switch without an
# error.
if ! command -v p4c >/dev/null 2>&1; then
    echo "bmv2 CLI files: SKIPPED, p4c is not on PATH (the CLI files load into the bmv2 JSON it compiles)"
else
    loaded=0
    files=0
    p4c --target bmv2 --arch v1model -o "$work/build" "$here/v1model/dataplane.p4" >"$work/p4c.log" 2>&1
    port=9599
    for cli in "$here"/tests/golden/*.bmv2.txt; do
        name=$(basename "$cli" .txt)
        files=$((files + 1))
        simple_switch --thrift-port "$port" "$work/build/dataplane.json" -- --priority-queues 8 >"$work/$name.switch.log" 2>&1 &
        sw=$!
        up=0
        for _ in $(seq 50); do
            if echo "show_tables" | simple_switch_CLI --thrift-port "$port" >/dev/null 2>&1; then up=1; break; fi
            sleep 0.1
        done
        simple_switch_CLI --thrift-port "$port" <"$cli" >"$work/$name.cli.log" 2>&1 || true
        kill "$sw" 2>/dev/null || true
        wait "$sw" 2>/dev/null || true
        if [ "$up" -eq 1 ] && ! grep -qiE "error|invalid|could not" "$work/$name.cli.log"; then
            echo "  ok    $name loads into simple_switch ($(grep -c "has been added" "$work/$name.cli.log") entries)"
            loaded=$((loaded + 1))
        else
            echo "  FAIL  $name does not load (log: $work/$name.cli.log)"
            fail=$((fail + 1))
        fi
    done
    echo "bmv2 CLI files: $loaded of $files loaded into simple_switch"
    [ "$files" -gt 0 ] || fail=1
fi
[ "$fail" -eq 0 ]
