# Shared by run.sh and test.sh (sourced, not run): a Python >= 3.11 virtualenv in .venv with the
# given requirement files installed. Reinstalls only when a requirement file changed.

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
    local python stamp wanted
    if [ ! -x .venv/bin/python ]; then
        python=$(cindy_python)
        if ! "$python" -c 'import ensurepip, venv' >/dev/null 2>&1; then
            cindy_apt_install python3-venv
        fi
        echo "Creating .venv with $python"
        "$python" -m venv .venv
    fi
    stamp=.venv/.cindy-requirements
    wanted=$(cat "$@" requirements.txt | sha256sum | cut -d' ' -f1)
    if [ ! -f "$stamp" ] || ! grep -qx "$wanted" "$stamp"; then
        echo "Installing Python packages from $*"
        .venv/bin/python -m pip install --quiet --no-input --upgrade pip
        local args=()
        local file
        for file in "$@"; do args+=(-r "$file"); done
        .venv/bin/python -m pip install --quiet --no-input "${args[@]}"
        echo "$wanted" >"$stamp"
    fi
}
