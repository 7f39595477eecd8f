#!/usr/bin/env bash
# Set up and run Cindy on the embedded default: SQLite, no Redis, the sample personas imported.
#   ./run.sh            web on http://127.0.0.1:8000 + the gateway and task workers; Ctrl-C stops all.
# Environment: CINDY_PORT (8000), PYTHON (a Python >= 3.11); everything else comes from .env.
set -euo pipefail
cd "$(dirname "$0")"
. scripts/venv.sh

PORT=${CINDY_PORT:-8000}
PY=.venv/bin/python
case "$PORT" in
'' | *[!0-9]*)
    echo "error: CINDY_PORT is \"$PORT\": set it to a port number, e.g. CINDY_PORT=8001 ./run.sh" >&2
    exit 2
    ;;
esac

cindy_venv requirements.txt

# The web server binds its port only after the migrations: find a taken port now, not after them.
# SO_REUSEADDR as the server sets it, so a port left in TIME_WAIT by a previous run counts as free.
if ! $PY -c 'import socket, sys
s = socket.socket()
s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
try:
    s.bind(("127.0.0.1", int(sys.argv[1])))
except OSError:
    sys.exit(1)' "$PORT"; then
    echo "error: port $PORT on 127.0.0.1 is already in use (another Cindy, or another server)." >&2
    echo "  Stop what listens there, or run on another port: CINDY_PORT=$((PORT + 1)) ./run.sh" >&2
    exit 1
fi

if [ ! -f .env ]; then
    echo "Writing .env (development settings with fresh secrets; edit it to taste)"
    umask 077
    {
        echo "# Written by run.sh on $(date -u +%Y-%m-%d). See .env.example for every variable."
        echo "DEBUG=true"
        echo "SECRET_KEY=$($PY -c 'import secrets; print(secrets.token_urlsafe(50))')"
        echo "CINDY_SESSION_KEY=$($PY -c 'import secrets; print(secrets.token_urlsafe(32))')"
    } >.env
    umask 022
fi

$PY manage.py migrate --noinput
if ! $PY manage.py importagents; then
    echo "warning: some persona files did not import (see the table above); starting with the rest" >&2
fi

# The sign-in hint is for a fresh install only: it goes once a superuser exists.
HAS_SUPERUSER=0
if $PY manage.py shell -c "from django.contrib.auth import get_user_model as m
raise SystemExit(0 if m().objects.filter(is_superuser=True).exists() else 1)" >/dev/null 2>&1; then
    HAS_SUPERUSER=1
fi

GATEWAY=1
if ! $PY manage.py help runagents >/dev/null 2>&1; then
    echo "warning: 'manage.py runagents' is not available in this checkout: starting the web process only" >&2
    GATEWAY=0
fi

# Each service runs in a process group of its own (setsid), and stopping a service signals its whole
# group, so the processes it started (the gateway's task workers) stop with it. The terminal's Ctrl-C
# reaches this script, which stops the groups: the services' own handling of SIGINT does not matter
# (a background runserver ignores it), nor whether the script's output still has a reader (with
# `./run.sh | tee log`, Ctrl-C ends tee too: writes then fail quietly instead of killing the script
# before it stopped anything). If the script itself is killed outright, a watchdog stops the groups.
trap '' PIPE
say() { printf '%s\n' "$*" 2>/dev/null || true; }

SERVICES=()
start_service() {
    setsid "$@" &
    SERVICES+=("$!")
}
signal_services() {
    local pid
    for pid in "${SERVICES[@]}"; do kill "-$1" -- "-$pid" 2>/dev/null || true; done
}
services_alive() {
    local pid
    for pid in "${SERVICES[@]}"; do kill -0 -- "-$pid" 2>/dev/null && return 0; done
    return 1
}
watchdog() {
    trap '' INT HUP PIPE
    local parent=$1
    shift
    while kill -0 "$parent" 2>/dev/null; do sleep 1; done
    local pid alive
    for pid in "$@"; do kill -TERM -- "-$pid" 2>/dev/null || true; done
    for _ in $(seq 1 30); do
        alive=0
        for pid in "$@"; do kill -0 -- "-$pid" 2>/dev/null && alive=1; done
        [ "$alive" = 0 ] && exit 0
        sleep 1
    done
    for pid in "$@"; do kill -KILL -- "-$pid" 2>/dev/null || true; done
}
WATCHDOG=
stop_all() {
    trap - INT TERM HUP
    signal_services TERM # first, before any output that could fail
    say ""
    say "Stopping web and gateway..."
    # The gateway finishes the work in flight before it exits; give it a moment, then insist.
    for _ in $(seq 1 30); do
        services_alive || break
        sleep 1
    done
    signal_services KILL
    [ -n "$WATCHDOG" ] && kill "$WATCHDOG" 2>/dev/null
    wait 2>/dev/null || true
}
trap 'stop_all; exit 130' INT
trap 'stop_all; exit 143' TERM
trap 'stop_all; exit 129' HUP

# --noreload: one process per service, so a signal reaches the server itself.
start_service $PY manage.py runserver --noreload "127.0.0.1:$PORT"
if [ "$GATEWAY" = 1 ]; then
    start_service $PY manage.py runagents
fi
watchdog $$ "${SERVICES[@]}" </dev/null >/dev/null 2>&1 &
WATCHDOG=$!

say ""
say "  Cindy is running."
say "    Admin:         http://127.0.0.1:$PORT/admin/"
say "    Dashboard:     http://127.0.0.1:$PORT/dashboard/"
say "    Sandbox chat:  http://127.0.0.1:$PORT/dashboard/sandbox/"
if [ "$HAS_SUPERUSER" = 0 ]; then
    say "  First time? In another terminal:"
    say "    .venv/bin/python manage.py createsuperuser"
    say "    .venv/bin/python manage.py otp_setup YOUR_USERNAME --static 5"
fi
say "  Press Ctrl-C to stop."
say ""

# Whichever service ends first (a crash, say) stops the other too. Nothing ends on its own while
# all is well, so that is a failure whatever its status (the web server exits 0 when it cannot listen).
set +e
wait -n "${SERVICES[@]}"
status=$?
set -e
ended=web
kill -0 -- "-${SERVICES[0]}" 2>/dev/null && ended=gateway
stop_all
say "error: the $ended process stopped on its own (status $status); see its output above." >&2
if [ "$ended" = web ]; then
    say "  If port $PORT was taken meanwhile, run on another one: CINDY_PORT=$((PORT + 1)) ./run.sh" >&2
fi
[ "$status" = 0 ] && status=1
exit "$status"
