#!/usr/bin/env bash
# test_install.sh — `cmake --install` puts a usable package in place, and three consumers use it.
#
# usage: bash tests/test_install.sh SOURCE_DIR BUILD_DIR SCRATCH_DIR
#
# BUILD_DIR must be a configured and built coopreduce tree (with or without CUDA). The test
# installs it under SCRATCH_DIR/prefix, checks the installed layout (header, versioned shared
# library with its SONAME and symlinks, CMake package config, pkg-config file, CLI), checks that
# the installed header compiles on its own as C99, C11, C++11 and C++17, then builds and runs
# three consumers against the installed copy only:
#   c99    cc -std=c99 -pedantic with the flags from pkg-config (SKIP without pkg-config)
#   cxx    c++ -std=c++11 with -I/-L/-rpath by hand: the header is C++ and has extern "C"
#   cmake  find_package(coopreduce 0.1 REQUIRED) + coopreduce::coopreduce
# Each consumer makes a CPU handle, sums [1, 2, 3, 4.5] (float32) to 10.5 and prints the library
# and canonical order versions; they need no GPU (and check that asking for GPUs does not fail).
# Environment: CMAKE (default cmake), CC (default cc), CXX (default c++).
set -u

if [ $# -ne 3 ]; then
    echo "usage: bash test_install.sh SOURCE_DIR BUILD_DIR SCRATCH_DIR" >&2
    exit 2
fi
SRC=$1
BUILD=$2
mkdir -p "$3" || exit 2
SCRATCH=$(cd "$3" && pwd) || exit 2
PREFIX="$SCRATCH/prefix"
CMAKE=${CMAKE:-cmake}
CC=${CC:-cc}
CXX=${CXX:-c++}
LOG="$SCRATCH/log"

passed=0
failed=0
pass() { passed=$((passed + 1)); }
fail() {
    failed=$((failed + 1))
    echo "FAIL: $*" >&2
    if [ -s "$LOG" ]; then sed 's/^/    | /' "$LOG" | tail -n 40 >&2; fi
}
skip() { echo "SKIP: $*"; }
finish() {
    echo "test_install: $passed passed, $failed failed"
    if [ "$failed" -gt 0 ] || [ "$passed" -eq 0 ]; then exit 1; fi
    exit 0
}
# check DESCRIPTION COMMAND... -- runs COMMAND with its output in $LOG; passes when it exits 0.
check() {
    local what=$1
    shift
    if "$@" >"$LOG" 2>&1; then pass; else fail "$what (exit $?)"; fi
}

# The expected version comes from the public header, the version's one source (CMakeLists.txt
# reads it from there too), so a version bump needs no edit here.
hdr_part() { sed -n "s/^#define COOPREDUCE_VERSION_$1 \([0-9][0-9]*\).*/\1/p" "$SRC/include/coopreduce.h"; }
VERSION="$(hdr_part MAJOR).$(hdr_part MINOR).$(hdr_part PATCH)"
case "$VERSION" in
*[0-9].[0-9]*.[0-9]*) ;;
*)
    echo "FAIL: no COOPREDUCE_VERSION_MAJOR/MINOR/PATCH in $SRC/include/coopreduce.h" >&2
    failed=$((failed + 1))
    finish
    ;;
esac
SOVERSION=${VERSION%%.*}

# Only our own subdirectories are removed: SCRATCH_DIR itself may be anything.
rm -rf "$PREFIX" "$SCRATCH/header" "$SCRATCH/c99" "$SCRATCH/cxx" "$SCRATCH/cmake-app"
: >"$LOG"

# ---------------------------------------------------------------- install
if ! "$CMAKE" --install "$BUILD" --prefix "$PREFIX" >"$LOG" 2>&1; then
    fail "cmake --install $BUILD --prefix $PREFIX"
    finish
fi
pass

# ---------------------------------------------------------------- layout
HEADER="$PREFIX/include/coopreduce.h"
if [ -f "$HEADER" ]; then pass; else fail "missing include/coopreduce.h"; fi

REAL=
for f in "$PREFIX"/lib*/libcoopreduce.so."$VERSION" "$PREFIX"/lib*/*/libcoopreduce.so."$VERSION"; do
    if [ -f "$f" ] && [ ! -L "$f" ]; then REAL=$f; break; fi
done
if [ -z "$REAL" ]; then
    fail "no lib*/libcoopreduce.so.$VERSION (a regular file) under $PREFIX"
    finish
fi
pass
LIBDIR=$(dirname "$REAL")

# symlink NAME TARGET -- LIBDIR/NAME must be a symlink to TARGET (itself, or through one more link).
symlink() {
    local path="$LIBDIR/$1" to
    if [ ! -L "$path" ]; then fail "$1 is not a symlink"; return; fi
    to=$(readlink "$path")
    if [ "$to" != "$2" ] && [ "$(readlink -f "$path")" != "$(readlink -f "$LIBDIR/$2")" ]; then
        fail "$1 -> $to, expected -> $2"
        return
    fi
    if [ ! -e "$path" ]; then fail "$1 is a dangling symlink"; return; fi
    pass
}
symlink "libcoopreduce.so.$SOVERSION" "libcoopreduce.so.$VERSION"
symlink "libcoopreduce.so" "libcoopreduce.so.$SOVERSION"

if command -v readelf >/dev/null 2>&1; then
    soname=$(readelf -d "$REAL" | sed -n 's/.*(SONAME).*\[\(.*\)\].*/\1/p')
    if [ "$soname" = "libcoopreduce.so.$SOVERSION" ]; then pass; else
        fail "SONAME of $(basename "$REAL") is '$soname', expected libcoopreduce.so.$SOVERSION"
    fi
    # Installed binaries must not point back into the build tree.
    buildabs=$(cd "$BUILD" && pwd)
    for f in "$REAL" "$PREFIX/bin/coopreduce"; do
        [ -f "$f" ] || continue
        if readelf -d "$f" | grep -E '\((RPATH|RUNPATH)\)' | grep -qF "$buildabs"; then
            fail "$f has an RPATH/RUNPATH into the build tree: $(readelf -d "$f" | grep PATH)"
        else
            pass
        fi
    done
else
    skip "readelf not found: SONAME and RPATH not checked"
fi

CMAKEDIR="$LIBDIR/cmake/coopreduce"
for f in coopreduceConfig.cmake coopreduceConfigVersion.cmake; do
    if [ -f "$CMAKEDIR/$f" ]; then pass; else fail "missing $CMAKEDIR/$f"; fi
done
PCDIR="$LIBDIR/pkgconfig"
if [ -f "$PCDIR/coopreduce.pc" ]; then pass; else fail "missing $PCDIR/coopreduce.pc"; fi

CLI="$PREFIX/bin/coopreduce"
if [ -x "$CLI" ]; then
    pass
    # The installed CLI must find the installed library by itself (no LD_LIBRARY_PATH).
    if out=$(env -u LD_LIBRARY_PATH "$CLI" --version 2>"$LOG") && [ "${out#coopreduce "$VERSION"}" != "$out" ]; then
        pass
    else
        fail "installed bin/coopreduce --version printed '$out', expected 'coopreduce $VERSION ...'"
    fi
else
    fail "missing or not executable: bin/coopreduce"
fi

# The header's version macros agree with the project version.
hv=$(sed -n 's/^#define COOPREDUCE_VERSION_\(MAJOR\|MINOR\|PATCH\) *\([0-9][0-9]*\).*/\2/p' "$HEADER" 2>/dev/null |
    paste -sd. -)
if [ "$hv" = "$VERSION" ]; then pass; else fail "header says version '$hv', project() says $VERSION"; fi
ORDER=$(sed -n 's/^#define COOPREDUCE_ORDER_VERSION *\([0-9][0-9]*\).*/\1/p' "$HEADER" 2>/dev/null)

# ---------------------------------------------------------------- the header alone
mkdir -p "$SCRATCH/header"
printf '#include <coopreduce.h>\nint main(void) { return 0; }\n' >"$SCRATCH/header/alone.c"
printf '#include <coopreduce.h>\nint main() { return 0; }\n' >"$SCRATCH/header/alone.cpp"
HWARN=(-Wall -Wextra -Werror -pedantic-errors)
for std in c99 c11; do
    check "header alone as C ($std ${HWARN[*]})" \
        "$CC" -std=$std "${HWARN[@]}" -I"$PREFIX/include" -c "$SCRATCH/header/alone.c" -o "$SCRATCH/header/$std.o"
done
if command -v "$CXX" >/dev/null 2>&1; then
    for std in c++11 c++17; do
        check "header alone as C++ ($std ${HWARN[*]})" \
            "$CXX" -std=$std "${HWARN[@]}" -I"$PREFIX/include" -c "$SCRATCH/header/alone.cpp" -o "$SCRATCH/header/$std.o"
    done
else
    skip "no C++ compiler ($CXX): header not checked as C++"
fi

# ---------------------------------------------------------------- consumers
# The same program in C and C++: expects the version string built from the header's macros.
CONSUMER_BODY='
    coopreduce_handle *h = NULL;
    const float x[4] = {1.0f, 2.0f, 3.0f, 4.5f};
    float sum = 0.0f;
    int gpus = -1;
    char want[32];
    coopreduce_status s;
    snprintf(want, sizeof want, "%d.%d.%d", COOPREDUCE_VERSION_MAJOR, COOPREDUCE_VERSION_MINOR,
             COOPREDUCE_VERSION_PATCH);
    if (strcmp(coopreduce_version_string(), want) != 0) {
        printf("version mismatch: library %s, header %s\n", coopreduce_version_string(), want);
        return 1;
    }
    if (coopreduce_order_version() != COOPREDUCE_ORDER_VERSION) {
        printf("order mismatch: library %d, header %d\n", coopreduce_order_version(),
               COOPREDUCE_ORDER_VERSION);
        return 1;
    }
    /* With no GPU (or no driver, or a CPU-only build) this is 0 and still succeeds. */
    s = coopreduce_gpu_count(&gpus);
    if (s != COOPREDUCE_SUCCESS) {
        printf("gpu_count: %s\n", coopreduce_status_string(s));
        return 1;
    }
    s = coopreduce_create_cpu(&h, 0);
    if (s != COOPREDUCE_SUCCESS) {
        printf("create_cpu: %s: %s\n", coopreduce_status_string(s), coopreduce_last_error(NULL));
        return 1;
    }
    s = coopreduce_sum(x, &sum, 4, COOPREDUCE_FLOAT32, h, NULL);
    if (s != COOPREDUCE_SUCCESS || sum != 10.5f) {
        printf("sum: %s, got %.9g\n", coopreduce_status_string(s), (double)sum);
        coopreduce_destroy(h);
        return 1;
    }
    if (coopreduce_destroy(h) != COOPREDUCE_SUCCESS) {
        printf("destroy failed\n");
        return 1;
    }
    printf("%s: coopreduce %s order %d gpus %d sum %g\n", WHO, coopreduce_version_string(),
           coopreduce_order_version(), gpus, (double)sum);
    return 0;
'
write_c() { # FILE WHO
    printf '%s\n' '#include <coopreduce.h>' '#include <stdio.h>' '#include <string.h>' \
        "#define WHO \"$2\"" 'int main(void)' '{' "$CONSUMER_BODY" '}' >"$1"
}

# run_consumer NAME EXE [VAR=VALUE...] -- runs it without a GPU-related environment, checks its
# output line, and (with ldd) that it loaded the installed library, not the one in the build tree.
run_consumer() {
    local name=$1 exe=$2 out lib
    shift 2
    if ! out=$(env "$@" "$exe" 2>"$LOG"); then
        echo "$out" >>"$LOG"
        fail "$name consumer failed to run"
        return
    fi
    # "gpus N": 0 here (no GPU), but the test may also run where there are GPUs.
    if [ "${out#"$name: coopreduce $VERSION order $ORDER gpus "}" != "$out" ] &&
        [ "${out% sum 10.5}" != "$out" ]; then
        echo "$out"
        pass
    else
        fail "$name consumer printed '$out', expected '$name: coopreduce $VERSION order $ORDER gpus N sum 10.5'"
        return
    fi
    if command -v ldd >/dev/null 2>&1; then
        lib=$(env "$@" ldd "$exe" 2>/dev/null | sed -n 's/.*libcoopreduce\.so[^ ]* => \([^ ]*\).*/\1/p')
        if [ "$(readlink -f "$lib")" = "$(readlink -f "$REAL")" ]; then pass; else
            : >"$LOG"
            fail "$name consumer loads libcoopreduce from '$lib', not from $LIBDIR"
        fi
    fi
}

# a. C99 through pkg-config
if command -v pkg-config >/dev/null 2>&1; then
    mkdir -p "$SCRATCH/c99"
    write_c "$SCRATCH/c99/main.c" c99
    export PKG_CONFIG_PATH="$PCDIR${PKG_CONFIG_PATH:+:$PKG_CONFIG_PATH}"
    pcv=$(pkg-config --modversion coopreduce 2>"$LOG")
    if [ "$pcv" = "$VERSION" ]; then pass; else fail "pkg-config --modversion coopreduce: '$pcv'"; fi
    pcflags=$(pkg-config --cflags --libs coopreduce 2>>"$LOG")
    # shellcheck disable=SC2086  # the flags are meant to be split
    if "$CC" -std=c99 -pedantic -Wall -Werror "$SCRATCH/c99/main.c" -o "$SCRATCH/c99/app" $pcflags \
        >"$LOG" 2>&1; then
        pass
        run_consumer c99 "$SCRATCH/c99/app" LD_LIBRARY_PATH="$LIBDIR${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
    else
        fail "C99 consumer does not build with pkg-config flags '$pcflags'"
    fi
else
    skip "pkg-config not installed: C99 pkg-config consumer not built"
fi

# b. C++ by hand, found through the rpath
if command -v "$CXX" >/dev/null 2>&1; then
    mkdir -p "$SCRATCH/cxx"
    {
        printf '%s\n' '#include <coopreduce.h>' '#include <cstdio>' '#include <cstring>' \
            'using std::printf; using std::snprintf; using std::strcmp;' \
            'static_assert(sizeof(coopreduce_status) > 0, "C++11");' \
            '#define WHO "cxx"' 'int main()' '{' "$CONSUMER_BODY" '}'
    } >"$SCRATCH/cxx/main.cpp"
    if "$CXX" -std=c++11 -Wall -Werror -I"$PREFIX/include" "$SCRATCH/cxx/main.cpp" -o "$SCRATCH/cxx/app" \
        -L"$LIBDIR" -lcoopreduce -Wl,-rpath,"$LIBDIR" >"$LOG" 2>&1; then
        pass
        run_consumer cxx "$SCRATCH/cxx/app" -u LD_LIBRARY_PATH
    else
        fail "C++ consumer does not build"
    fi
else
    skip "no C++ compiler ($CXX): C++ consumer not built"
fi

# c. CMake find_package; the build-tree rpath CMake adds finds the library
mkdir -p "$SCRATCH/cmake-app/src"
write_c "$SCRATCH/cmake-app/src/main.c" cmake
cat >"$SCRATCH/cmake-app/src/CMakeLists.txt" <<'EOF'
cmake_minimum_required(VERSION 3.16)
project(coopreduce_consumer LANGUAGES C)
find_package(coopreduce 0.1 REQUIRED)
message(STATUS "consumer: coopreduce ${coopreduce_VERSION} from ${coopreduce_DIR}")
add_executable(app main.c)
set_target_properties(app PROPERTIES C_STANDARD 99 C_STANDARD_REQUIRED ON C_EXTENSIONS OFF)
target_compile_options(app PRIVATE -Wall -Werror)
target_link_libraries(app PRIVATE coopreduce::coopreduce)
EOF
if "$CMAKE" -S "$SCRATCH/cmake-app/src" -B "$SCRATCH/cmake-app/build" -DCMAKE_BUILD_TYPE=Release \
    -DCMAKE_PREFIX_PATH="$PREFIX" -DCMAKE_FIND_USE_PACKAGE_REGISTRY=OFF >"$LOG" 2>&1; then
    found=$(sed -n 's/^-- consumer: coopreduce \([^ ]*\) from \(.*\)$/\1 \2/p' "$LOG")
    if [ "$found" = "$VERSION $CMAKEDIR" ]; then pass; else
        fail "find_package found '$found', expected '$VERSION $CMAKEDIR'"
    fi
    if "$CMAKE" --build "$SCRATCH/cmake-app/build" >"$LOG" 2>&1; then
        pass
        run_consumer cmake "$SCRATCH/cmake-app/build/app" -u LD_LIBRARY_PATH
    else
        fail "CMake consumer does not build"
    fi
else
    fail "CMake consumer does not configure (find_package(coopreduce 0.1))"
fi

finish
