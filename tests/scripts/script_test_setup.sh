# Sourced by the tests of bench/ scripts (tests/scripts/*_test.sh): strict mode, the binary under
# test ($1 of the test: `bin`), the repository root (`here`), a scratch folder removed on exit
# (`tmp`, with `$tmp/scratch` to give the script as TMPDIR) and `fail MESSAGE`.
set -euo pipefail
bin=$1
here=$(cd "$(dirname "${BASH_SOURCE[1]}")/../.." && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
mkdir "$tmp/scratch"
fail() { echo "FAIL: $*" >&2; exit 1; }
