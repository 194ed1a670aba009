# cli_lib.sh — what the CLI test scripts (test_cli.sh, test_cli_axis.sh) share. Sourced, then:
#   cli_setup NAME "$@"   checks the arguments (PATH_TO_coopreduce SCRATCH_DIR), sets CLI (an
#                         absolute path when given a relative one: some checks run from another
#                         directory), DIR, OUT and ERR, and zeroes the counters
#   pass / fail MESSAGE   count a check (fail prints the message and the last run's stderr)
#   run ARGS...           runs the CLI: stdout in $OUT, stderr in $ERR, exit status in $RC
#   json KEY              the value of a top-level "key" in the one-line JSON object in $OUT
#   le HEX                the number HEX little-endian, as many bytes as it has digit pairs
#   cli_summary NAME      prints "NAME: P passed, F failed"; succeeds when F is 0
# Needs only bash, coreutils and sed.

cli_setup() {
    local name=$1
    shift
    if [ $# -ne 2 ]; then
        echo "usage: bash $name.sh PATH_TO_coopreduce SCRATCH_DIR" >&2
        exit 2
    fi
    CLI=$1
    DIR=$2
    case $CLI in /*) ;; */*) CLI=$PWD/$CLI ;; esac
    mkdir -p "$DIR" || exit 2
    OUT="$DIR/stdout"
    ERR="$DIR/stderr"
    passed=0
    failed=0
}

pass() { passed=$((passed + 1)); }
fail() {
    failed=$((failed + 1))
    echo "FAIL: $*" >&2
    if [ -s "$ERR" ]; then sed 's/^/    stderr: /' "$ERR" >&2; fi
}

run() {
    "$CLI" "$@" >"$OUT" 2>"$ERR"
    RC=$?
}

json() {
    sed -n 's/.*"'"$1"'": *"\{0,1\}\([^",}]*\)"\{0,1\}[,}].*/\1/p' "$OUT" | head -n 1
}

le() {
    local h=$1 i
    for ((i = ${#h} - 2; i >= 0; i -= 2)); do printf "\\x${h:i:2}"; done
}

cli_summary() {
    echo "$1: $passed passed, $failed failed"
    [ "$failed" -eq 0 ]
}
