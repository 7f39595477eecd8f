#!/usr/bin/env bash
# Set up and run Cindy on the embedded default: SQLite, no Redis, the sample personas imported.
#   ./run.sh            web on http://127.0.0.1:8000 + the gateway and task workers; Ctrl-C stops all.
# Environment: CINDY_PORT (8000), PYTHON (a Python >= 3.11); everything else comes from .env.
set -euo pipefail
cd "$(dirname "$0")"
. scripts/venv.sh

PORT=${CINDY_PORT:-8000}
PY=.venv/bin/python

cindy_venv requirements.txt

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

GATEWAY=1
if ! $PY manage.py help runagents >/dev/null 2>&1; then
    echo "warning: 'manage.py runagents' is not available in this checkout: starting the web process only" >&2
    GATEWAY=0
fi

WEB_PID=
GATEWAY_PID=
stop_all() {
    trap - INT TERM
    echo
    echo "Stopping web and gateway..."
    for pid in $WEB_PID $GATEWAY_PID; do kill -TERM "$pid" 2>/dev/null || true; done
    # The gateway finishes the work in flight before it exits; give it a moment, then insist.
    for _ in $(seq 1 30); do
        alive=0
        for pid in $WEB_PID $GATEWAY_PID; do kill -0 "$pid" 2>/dev/null && alive=1; done
        [ "$alive" = 0 ] && break
        sleep 1
    done
    for pid in $WEB_PID $GATEWAY_PID; do kill -KILL "$pid" 2>/dev/null || true; done
    wait 2>/dev/null || true
}
trap 'stop_all; exit 130' INT
trap 'stop_all; exit 143' TERM

# --noreload: one process per service, so a signal reaches the server itself.
$PY manage.py runserver --noreload "127.0.0.1:$PORT" &
WEB_PID=$!
if [ "$GATEWAY" = 1 ]; then
    $PY manage.py runagents &
    GATEWAY_PID=$!
fi

cat <<MSG

  Cindy is running.
    Admin:         http://127.0.0.1:$PORT/admin/
    Dashboard:     http://127.0.0.1:$PORT/dashboard/
    Sandbox chat:  http://127.0.0.1:$PORT/dashboard/sandbox/
  First time? In another terminal:
    .venv/bin/python manage.py createsuperuser
    .venv/bin/python manage.py otp_setup YOUR_USERNAME --static 5
  Press Ctrl-C to stop.

MSG

# Whichever process ends first (a crash, say) stops the other too.
set +e
wait -n
status=$?
set -e
stop_all
exit "$status"
