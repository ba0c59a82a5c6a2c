#!/usr/bin/env bash
# Builds every libFuzzer target Fuzz/<name>/entry.swift together with the SpinWire sources
# and runs each for a bounded time. Usage: Fuzz/run.sh [seconds-per-target] [name ...]
# (default 60 s, all targets). See Fuzz/README.md.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD

seconds=${1:-60}
shift || true
if (($#)); then
    targets=("$@")
else
    targets=()
    for dir in Fuzz/*/; do
        [[ -f "$dir/entry.swift" ]] && targets+=("$(basename "$dir")")
    done
fi
((${#targets[@]})) || { echo "no Fuzz/<name>/entry.swift found" >&2; exit 1; }

swiftc=${SWIFTC:-$(command -v swiftc)}
resource_dir=$("$swiftc" -print-target-info | sed -n 's/.*"runtimeResourcePath": "\(.*\)".*/\1/p')
if ! ls "$resource_dir"/../clang/lib/linux/libclang_rt.fuzzer-*.a >/dev/null 2>&1 \
    && ! ls "$resource_dir"/clang/lib/linux/libclang_rt.fuzzer-*.a >/dev/null 2>&1; then
    echo "warning: libclang_rt.fuzzer not found next to $swiftc; the link may fail" >&2
fi

# SpinWire imports the C shim modules CZlib and COpenSSL. SwiftPM generates their module
# maps; a bare swiftc needs them written out.
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
for shim in CZlib COpenSSL; do
    mkdir -p "$work/$shim"
    cat >"$work/$shim/module.modulemap" <<MAP
module $shim {
    header "$root/Sources/$shim/include/$shim.h"
    export *
}
MAP
done

mapfile -t sources < <(find Sources/SpinWire -name '*.swift' | sort)
mkdir -p Fuzz/artifacts
status=0

for name in "${targets[@]}"; do
    entry="Fuzz/$name/entry.swift"
    [[ -f "$entry" ]] || { echo "no $entry" >&2; status=1; continue; }
    binary="$root/.build/fuzz/fuzz-$name"  # kept, to reproduce a finding
    mkdir -p "$root/.build/fuzz"
    rm -f "$binary"
    echo "=== building $name"
    # One module: the entry sees SpinWire's internal and package API without an import.
    "$swiftc" -sanitize=fuzzer,address -parse-as-library -O -g -use-ld=lld \
        -swift-version 6 -module-name SpinWire -package-name spin_server \
        -Xcc -fmodule-map-file="$work/CZlib/module.modulemap" \
        -Xcc -fmodule-map-file="$work/COpenSSL/module.modulemap" \
        -I Sources/CZlib/include -I Sources/COpenSSL/include \
        "${sources[@]}" "$entry" -lz -lssl -lcrypto -o "$binary" 2>&1 \
        | { grep -v "ld.gold: warning: Cannot export local symbol" || true; }
    [[ -x "$binary" ]] || { echo "=== $name: build failed" >&2; status=1; continue; }

    corpus="Fuzz/corpus-$name"
    mkdir -p "$corpus"
    seed_dirs=()
    [[ -d "Fuzz/$name/seeds" ]] && seed_dirs+=("Fuzz/$name/seeds")
    options=()
    for dict in "Fuzz/$name"/*.dict; do
        [[ -f "$dict" ]] && options+=("-dict=$dict")
    done
    before=$(find Fuzz/artifacts -name "$name-*" | wc -l)
    echo "=== fuzzing $name for ${seconds}s (corpus $corpus)"
    set +e
    "$binary" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -max_len=4096 \
        -print_final_stats=1 -artifact_prefix="Fuzz/artifacts/$name-" "${options[@]}" \
        "$corpus" "${seed_dirs[@]}" 2>"$work/$name.log"
    code=$?
    set -e
    grep -E '^(#[0-9]+[[:space:]]+DONE|stat::number_of_executed_units|stat::peak_rss_mb|==[0-9]+==ERROR|SUMMARY|Fatal error|.*precondition)' \
        "$work/$name.log" || true
    after=$(find Fuzz/artifacts -name "$name-*" | wc -l)
    if ((code != 0 || after > before)); then
        echo "=== $name: FINDINGS (exit $code). Last lines of the log:"
        tail -n 40 "$work/$name.log"
        find Fuzz/artifacts -name "$name-*" -newer "$binary" -print
        status=1
    else
        echo "=== $name: no findings"
    fi
done
exit $status
