#!/usr/bin/env bash
# ThreadSanitizer pass over the tests that exercise the flow graph and the multi-threaded stages:
# configures build-tsan (CMAKE_BUILD_TYPE=Tsan), builds only those test binaries and the
# chakraflow binary they run (itself instrumented), and runs them with ctest.
#
# oneTBB: Debian's libtbb.so.12 is not instrumented, so TSan sees none of the synchronization
# inside it (task spawn and steal, the graph's wait_for_all) and reports nearly every hand-off
# between a flow-graph node and the next, or the main thread, as a race: in TBB's header code and
# in ours alike, so no narrow suppression separates them from real races. Instead this script
# builds the same oneTBB release (the Debian source package of the installed libtbb-dev, fetched
# with apt-get source, Debian's patches applied) with -fsanitize=thread, once, into
# build-tsan/onetbb/, and runs the tests on it (LD_LIBRARY_PATH; same headers, same ABI). TBB then
# needs no suppression; tests/tsan.supp holds the one other library (Open MPI) needs, explained.
# Usage: scripts/tsan.sh [CTEST_ARGS...]   (e.g. -R RunBatch to run some tests only)
#        scripts/tsan.sh --check   only configures build-tsan and checks that ninja knows how to
#          build every target above (a dry run: nothing compiled, no oneTBB). scripts/test.sh runs
#          it: building these targets with TSan costs CI more minutes than it has (README.md).
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/install_deps.sh
jobs="$(nproc)"
# link_test and convert_test run the stages' ranges on plain threads (testing::ThreadedBatches,
# ranges of a few items): no oneTBB, so TSan sees every hand-off there even without the build below.
tests=(cli_test rank_graph_test link_golden_test simulate_test simulate_golden_test feed_test
  feed_golden_test link_test convert_test)

# Without the Python module: a TSan-built extension does not load into a plain interpreter.
cmake -S . -B build-tsan -G Ninja -DCMAKE_BUILD_TYPE=Tsan -DCHAKRAFLOW_BUILD_BENCH=OFF \
  -DCHAKRAFLOW_BUILD_PYTHON=OFF >/dev/null
if [ "${1:-}" = --check ]; then
  # ninja -n fails on a target that no longer exists (a test renamed) and on a broken build graph.
  cmake --build build-tsan --target chakraflow "${tests[@]}" -- -n >/dev/null
  echo "scripts/tsan.sh --check: build-tsan configures and has every target (nothing built)"
  exit 0
fi

# --- oneTBB with TSan (cached).
tbb_dir="$PWD/build-tsan/onetbb"
tbb_lib=$(find "$tbb_dir/build" -name libtbb.so.12 2>/dev/null | head -1 || true)
if [ -z "$tbb_lib" ]; then
  pkg=$(dpkg-query -W -f='${source:Package}' libtbb-dev)
  version=$(dpkg-query -W -f='${source:Version}' libtbb-dev)
  echo "== building $pkg $version with -fsanitize=thread in $tbb_dir"
  rm -rf "$tbb_dir" && mkdir -p "$tbb_dir/apt/lists/partial" "$tbb_dir/apt/cache/partial"
  # A private deb-src list: the machine's apt configuration is left as it is.
  cat > "$tbb_dir/apt/debian-src.sources" <<EOF
Types: deb-src
URIs: http://deb.debian.org/debian
Suites: $(. /etc/os-release && echo "$VERSION_CODENAME $VERSION_CODENAME-updates")
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
EOF
  apt_opts=(-o Dir::Etc::SourceList=/dev/null -o Dir::Etc::SourceParts="$tbb_dir/apt"
            -o Dir::State::Lists="$tbb_dir/apt/lists" -o Dir::Cache="$tbb_dir/apt/cache" -qq)
  apt-get "${apt_opts[@]}" update
  # apt checks the files against the signed index; dpkg-source may warn that it cannot check the
  # .dsc signature itself (no Debian keyring installed).
  (cd "$tbb_dir" && apt-get "${apt_opts[@]}" source --download-only "$pkg=$version" \
     && dpkg-source -x ./*.dsc src >/dev/null)
  cmake -S "$tbb_dir/src" -B "$tbb_dir/build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DTBB_SANITIZE=thread -DTBB_TEST=OFF -DTBB_EXAMPLES=OFF -DTBB_STRICT=OFF -DTBBMALLOC_BUILD=OFF \
    -DTBB_ENABLE_IPO=OFF >/dev/null
  cmake --build "$tbb_dir/build" -j"$jobs" --target tbb
  tbb_lib=$(find "$tbb_dir/build" -name libtbb.so.12 | head -1)
fi

# --- chakraflow with TSan (configured above).
cmake --build build-tsan -j"$jobs" --target chakraflow "${tests[@]}"

export LD_LIBRARY_PATH="$(dirname "$tbb_lib")${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
ldd build-tsan/chakraflow | grep -q "$tbb_lib" || { echo "chakraflow does not load $tbb_lib" >&2; exit 1; }
# Any report fails the test (exit code 66), in the test binaries and in the chakraflow processes
# they start.
export TSAN_OPTIONS="suppressions=$PWD/tests/tsan.supp second_deadlock_stack=1 exitcode=66 ${TSAN_OPTIONS:-}"
# TSan needs its fixed memory layout: kernels with more address randomisation than it supports make
# it fail at start ("unexpected memory mapping"); run without randomisation then.
run=()
if [ "$(cat /proc/sys/vm/mmap_rnd_bits 2>/dev/null || echo 0)" -gt 28 ] && command -v setarch >/dev/null; then
  run=(setarch "$(uname -m)" -R)
fi
# Only the binaries built above: the others register a failing <target>_NOT_BUILT test. The install
# test builds a separate consumer project and is not about threads.
cd build-tsan
"${run[@]}" ctest -j"$jobs" --output-on-failure --timeout 1800 -E "_NOT_BUILT|feeder_install_consumer" "$@"
