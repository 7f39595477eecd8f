# Shared by run.sh and test.sh (sourced, not run): a Python >= 3.11 virtualenv in .venv with the
# given requirement files installed. Installs only what the stamp does not show installed.

cindy_python() {
    local candidate
    for candidate in "${PYTHON:-}" python3.13 python3.12 python3.11 python3; do
        [ -n "$candidate" ] || continue
        if command -v "$candidate" >/dev/null 2>&1 &&
            "$candidate" -c 'import sys; sys.exit(sys.version_info < (3, 11))' 2>/dev/null; then
            echo "$candidate"
            return 0
        fi
    done
    echo "error: Cindy needs Python 3.11 or newer (apt-get install python3), or set PYTHON=/path/to/python3.11" >&2
    return 1
}

cindy_apt_install() {
    # Install Debian packages when running as root; otherwise say exactly what is missing.
    [ "$#" -gt 0 ] || return 0
    if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
        echo "Installing Debian packages: $*"
        DEBIAN_FRONTEND=noninteractive apt-get update -qq
        DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "$@" </dev/null
    else
        echo "warning: missing Debian packages: $* (install them with: sudo apt-get install $*)" >&2
    fi
}

cindy_venv() {
    # Usage: cindy_venv REQUIREMENTS_FILE...
    # The stamp lists every requirement file installed into .venv, one `sha256sum` line each (hash and
    # path), across run.sh and test.sh: packages are installed only when a file asked for (or
    # requirements.txt, which the others include) is not installed with its current content, so
    # switching between the scripts installs nothing.
    local python stamp file
    if [ ! -x .venv/bin/python ]; then
        python=$(cindy_python)
        if ! "$python" -c 'import ensurepip, venv' >/dev/null 2>&1; then
            cindy_apt_install python3-venv
        fi
        echo "Creating .venv with $python"
        "$python" -m venv .venv
    fi
    stamp=.venv/.cindy-requirements
    local files=() missing=()
    for file in "$@" requirements.txt; do
        case " ${files[*]-} " in *" $file "*) continue ;; esac
        files+=("$file")
        if [ ! -f "$stamp" ] || ! grep -qxF "$(sha256sum "$file")" "$stamp"; then
            missing+=("$file")
        fi
    done
    [ "${#missing[@]}" -gt 0 ] || return 0
    echo "Installing Python packages from $*"
    .venv/bin/python -m pip install --quiet --no-input --upgrade pip
    local args=()
    for file in "$@"; do args+=(-r "$file"); done
    .venv/bin/python -m pip install --quiet --no-input "${args[@]}"
    # Keep the lines of the other files installed earlier; replace those of the files just installed.
    {
        if [ -f "$stamp" ]; then
            awk -v installed=" ${files[*]} " '{ path = $0; sub(/^[^ ]+  /, "", path) }
                index(installed, " " path " ") == 0 && NF >= 2' "$stamp"
        fi
        sha256sum "${files[@]}"
    } >"$stamp.new"
    mv "$stamp.new" "$stamp"
}
