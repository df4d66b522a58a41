# Sourced by grading/workbook and tests/run: makes sure the tools are there
# and the build directory is configured. Never prints a Meson traceback for a
# missing tool: one sentence saying what to install instead.

wb_missing_packages() {
    local missing=""
    command -v meson >/dev/null 2>&1 || missing="$missing meson"
    command -v ninja >/dev/null 2>&1 || missing="$missing ninja-build"
    command -v pkg-config >/dev/null 2>&1 || missing="$missing pkg-config"
    command -v gcc >/dev/null 2>&1 || missing="$missing gcc"
    if command -v pkg-config >/dev/null 2>&1; then
        pkg-config --exists 'criterion >= 2.4' || missing="$missing libcriterion-dev"
        pkg-config --exists zlib || missing="$missing zlib1g-dev"
    else
        missing="$missing libcriterion-dev zlib1g-dev"
    fi
    # Extra programs a caller needs, as PROGRAM or PROGRAM:PACKAGE (tests/run:
    # pandoc, to render the book; bwrap, the grader's sandbox).
    local entry
    for entry in ${WB_EXTRA_PROGRAMS:-}; do
        command -v "${entry%%:*}" >/dev/null 2>&1 || missing="$missing ${entry#*:}"
    done
    echo "$missing"
}

# A Criterion whose libcriterion.so is no library: a relocatable copy whose
# symbolic link became a text file holding the link's target on the way
# (the linker then fails with "file format not recognized; treating as
# linker script", which names no cause).
wb_check_criterion_library() {
    local lib
    lib="$(pkg-config --variable=libdir criterion 2>/dev/null)/libcriterion.so"
    [ -f "$lib" ] || return 0
    head -c 4 "$lib" | grep -q ELF && return 0
    echo "error: $lib is not a shared library but a file of $(wc -c <"$lib") bytes (a symbolic link copied as text?): replace it with a link to the libcriterion.so.N beside it, or a copy of that file." >&2
    return 1
}

# Installs what is missing with apt-get when we may (root, or sudo without a
# password); otherwise prints the exact command and fails. apt-get and dpkg
# write into a log (WB_APT_LOG, else a file in $TMPDIR); the screen gets one
# line, and the log's end when it fails.
wb_ensure_tools() {
    if ! command -v nvcc >/dev/null 2>&1; then
        if [ -x /usr/local/cuda/bin/nvcc ]; then
            export PATH="/usr/local/cuda/bin:$PATH"
        else
            echo "error: the CUDA toolkit (nvcc) is not installed or not on PATH: install CUDA 13 from https://developer.nvidia.com/cuda-downloads and add its bin folder to PATH." >&2
            return 1
        fi
    fi
    local missing
    missing=$(wb_missing_packages)
    [ -z "$missing" ] && { wb_check_criterion_library; return; }
    local sudo=""
    if [ "$(id -u)" != 0 ]; then
        if command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; then
            sudo="sudo"
        else
            echo "error: missing packages:$missing. Install them with:" >&2
            echo "    sudo apt-get install -y$missing" >&2
            return 1
        fi
    fi
    if ! command -v apt-get >/dev/null 2>&1; then
        echo "error: missing:$missing (no apt-get here: install Meson >= 1.0.1, Ninja, pkg-config, Criterion 2.4 and zlib with your package manager)." >&2
        return 1
    fi
    local log="${WB_APT_LOG:-${TMPDIR:-/tmp}/cuda-workbook-apt-$(id -u).log}" start=$SECONDS
    printf 'Installing%s with apt-get (log: %s) ... ' "$missing" "$log" >&2
    if { $sudo apt-get update -qq &&
            $sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $missing; } >"$log" 2>&1; then
        echo "done ($((SECONDS - start)) s)" >&2
    else
        echo "failed:" >&2
        tail -n 5 "$log" >&2
        echo "error: apt-get could not install:$missing (full log: $log)" >&2
        return 1
    fi
}

# MAJOR.MINOR of the Meson that configured a build folder: Meson refuses a
# folder of another minor version ("Coredata file ... references functions
# or classes that don't exist").
wb_meson_of() {
    python3 -c 'import json, sys; v = json.load(open(sys.argv[1]))["meson_version"]
print("%d.%d" % (v["major"], v["minor"]))' "$1/meson-info/meson-info.json" 2>/dev/null
}

# wb_configure SOURCE_DIR BUILD_DIR [meson options...]: set up once; later
# runs only rebuild (ninja re-runs meson itself when meson.build changes). A
# folder configured by another Meson version is configured again, its
# options kept (meson setup --wipe).
wb_configure() {
    local src=$1 build=$2
    shift 2
    if [ -f "$build/build.ninja" ]; then
        local theirs ours
        theirs=$(wb_meson_of "$build") ours=$(meson --version | cut -d. -f1,2)
        [ "$theirs" = "$ours" ] && return 0
        echo "$build was configured by Meson ${theirs:-?}, this is Meson $ours: configuring it again (its options kept) ..." >&2
        set -- --wipe "$@"
    fi
    meson setup "$build" "$src" "$@" >"$build.setup.log" 2>&1 || {
        grep -E "ERROR|error" "$build.setup.log" | tail -3 >&2
        echo "(full log: $build.setup.log)" >&2
        return 1
    }
    rm -f "$build.setup.log"
}
