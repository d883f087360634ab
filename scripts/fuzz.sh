#!/usr/bin/env bash
# Runs every cargo-fuzz target in fuzz/ for a short time and prints executions per target.
#
#   scripts/fuzz.sh [SECONDS] [TARGET...]      (default: 60 s each, every target)
#
# Environment:
#   FUZZ_SECONDS    seconds per target when no SECONDS argument is given (default 60)
#   FUZZ_SANITIZER  none (default; the crate forbids unsafe code) or address
#   FUZZ_CMIN       1 (default) minimises each corpus after its run, so the committed corpus
#                   stays small; 0 keeps everything the run found
#   FUZZ_MAX_LEN    the largest input, in bytes (default 4096)
#
# cargo-fuzz needs nightly compiler features; on the stable toolchain RUSTC_BOOTSTRAP=1
# enables them. Corpora live in fuzz/corpus/<target>/ (seeds are committed); crashes are saved
# in fuzz/artifacts/<target>/ and make the script exit non-zero after every target has run.
# Reproduce one with: RUSTC_BOOTSTRAP=1 cargo fuzz run -s none <target> <artifact>
set -euo pipefail
cd "$(dirname "$0")/../fuzz"

secs="${1:-${FUZZ_SECONDS:-60}}"
if [ "$#" -gt 0 ]; then shift; fi
sanitizer="${FUZZ_SANITIZER:-none}"
cmin="${FUZZ_CMIN:-1}"
max_len="${FUZZ_MAX_LEN:-4096}"
export RUSTC_BOOTSTRAP=1

if ! cargo fuzz --version >/dev/null 2>&1; then
  echo "==> installing cargo-fuzz"
  cargo install cargo-fuzz --locked
fi

if [ "$#" -gt 0 ]; then
  targets=("$@")
else
  mapfile -t targets < <(cargo fuzz list)
fi

echo "==> building ${#targets[@]} targets (sanitizer: $sanitizer)"
cargo fuzz build -s "$sanitizer"

logs="$(mktemp -d)"
trap 'rm -rf "$logs"' EXIT
failed=()
summary=()
for t in "${targets[@]}"; do
  corpus="corpus/$t"
  mkdir -p "$corpus"
  extra=()
  if [ -f "dict/$t.dict" ]; then extra+=("-dict=dict/$t.dict"); fi
  if [ "$t" = "jsonrpc_decode" ] && [ -f dict/jsonrpc.dict ]; then extra+=("-dict=dict/jsonrpc.dict"); fi
  echo "==> $t: ${secs}s"
  status=0
  cargo fuzz run -s "$sanitizer" "$t" "$corpus" -- \
    -max_total_time="$secs" -max_len="$max_len" -timeout=30 -rss_limit_mb=2048 \
    -print_final_stats=1 ${extra[@]+"${extra[@]}"} >"$logs/$t.log" 2>&1 || status=$?
  execs="$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$logs/$t.log" | grep -o '[0-9]*$' | tail -1)"
  if [ -z "$execs" ]; then
    execs="$(grep -o '^Done [0-9]* runs' "$logs/$t.log" | grep -o '[0-9]*' | tail -1)"
  fi
  if [ "$status" -ne 0 ]; then
    failed+=("$t")
    tail -40 "$logs/$t.log"
    echo "!!  $t failed (exit $status); see fuzz/artifacts/$t/"
  fi
  if [ "$cmin" = "1" ] && [ "$status" -eq 0 ]; then
    cargo fuzz cmin -s "$sanitizer" "$t" "$corpus" -- -max_len="$max_len" >"$logs/$t.cmin.log" 2>&1 ||
      echo "    (corpus minimisation failed; corpus kept as is)"
  fi
  files="$(find "$corpus" -type f | wc -l)"
  size="$(du -sk --apparent-size "$corpus" | cut -f1)"
  line="$(printf '%-16s %12s execs  %4s s  corpus %5s files %6s KiB  %s' "$t" "${execs:-?}" "$secs" "$files" "$size" "$([ "$status" -eq 0 ] && echo ok || echo CRASH)")"
  summary+=("$line")
  echo "    $line"
done

echo
echo "==> fuzz summary ($(date -u +%Y-%m-%dT%H:%MZ), sanitizer $sanitizer, max_len $max_len)"
printf '%s\n' "${summary[@]}"
if [ "${#failed[@]}" -gt 0 ]; then
  echo "crashes in: ${failed[*]}"
  exit 1
fi
