# Stage timing for scripts/test (sourced, not run). `stage NAME CMD...` runs
# CMD and records its seconds; when the script exits, for any reason, the
# EXIT trap prints every stage with its seconds (the failed one marked), the
# total, ccache's hit rate, the tests run per label in each ctest run and the
# 15 slowest tests of each run. docs/testing.md keeps these tables.

stage_rows=()
stage_current=""
stage_ctest_dirs=()  # build dirs whose ctest-output.log the report reads
stage_started=$SECONDS

stage() {  # name, command...
  local name=$1 t0=$SECONDS
  shift
  stage_current=$name
  stage_t0_of_failed=$t0
  echo "== $name =="
  "$@"
  stage_rows+=("$(printf '%-22s %6d s' "$name" $((SECONDS - t0)))")
  stage_current=""
}

# ctest prints "  12/591 Test  #12: name .....   Passed    1.23 sec".
slowest_tests() {  # build-dir
  sed -n -E 's/^ *[0-9]+\/[0-9]+ +Test +#[0-9]+: (.*[^ .]) \.+.* ([0-9]+\.[0-9]+) sec$/\2\t\1/p' \
    "$1/ctest-output.log" | sort -t$'\t' -k1,1 -g -r |
    awk -F'\t' 'NR <= 15 { printf "  %8.2f s  %s\n", $1, $2 }'
}

stage_report() {
  local status=$?
  trap - EXIT
  echo
  echo "== stages (scripts/test) =="
  local row
  for row in "${stage_rows[@]}"; do
    echo "  $row"
  done
  if [[ -n $stage_current ]]; then
    printf '  %-22s %6d s  FAILED\n' "$stage_current" $((SECONDS - stage_t0_of_failed))
  fi
  printf '  %-22s %6d s\n' total $((SECONDS - stage_started))
  if command -v ccache >/dev/null 2>&1; then
    echo "  ccache: $(ccache -s 2>/dev/null | awk '/^ *Hits:/ && !seen++ { sub(/^ */, ""); print }')"
  fi
  local dir
  for dir in "${stage_ctest_dirs[@]}"; do
    echo
    [[ -f $dir/ctest-output.log ]] || continue
    echo "== $dir: $(grep -E 'tests passed|tests failed' "$dir/ctest-output.log" | tail -n 1) =="
    # ctest's own per-label summary: seconds and the number of tests.
    sed -n '/^Label Time Summary:/,/^$/p' "$dir/ctest-output.log" | sed 's/^/  /'
    echo "  slowest:"
    slowest_tests "$dir"
  done
  exit "$status"
}

stage_t0_of_failed=$SECONDS
trap stage_report EXIT
