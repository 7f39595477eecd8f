# The service library behind ./cindy (sourced, not run): runs web, gateway and workers in the
# background on one host, each with a PID file under var/run and a log under var/log.
#
# Each service is started in a session of its own (setsid), so its PID is also its process group:
# stopping signals the whole group, and the processes it started stop with it.
# Settings: CINDY_BIND (127.0.0.1), CINDY_PORT (8000), CINDY_GATEWAY_ARGS (--no-workers),
# CINDY_START_TIMEOUT (60 s for the web server to listen),
# CINDY_STOP_TIMEOUT (45 s: the gateway drains for up to 30 s), CINDY_LOG_MAX_BYTES (10 MiB),
# CINDY_LOG_KEEP (5 rotated logs per service).

CINDY_ALL_SERVICES=(web gateway workers)
CINDY_RUN_DIR=var/run
CINDY_LOG_DIR=var/log
PY=.venv/bin/python

svc_say() { printf '%s\n' "$*"; }
svc_error() { printf 'error: %s\n' "$*" >&2; }

svc_pid_file() { echo "$CINDY_RUN_DIR/$1.pid"; }
svc_log_file() { echo "$CINDY_LOG_DIR/$1.log"; }

svc_command() {
    # The command line of a service, as its process runs it.
    case "$1" in
    web) echo "$PY -m daphne -b ${CINDY_BIND:-127.0.0.1} -p ${CINDY_PORT:-8000} cindy_site.asgi:application" ;;
    gateway) echo "$PY manage.py runagents ${CINDY_GATEWAY_ARGS:---no-workers}" ;;
    workers) echo "$PY manage.py runworkers" ;;
    esac
}

svc_names() {
    # The services named on the command line (all three when none is), checked.
    local name
    if [ "$#" = 0 ]; then
        echo "${CINDY_ALL_SERVICES[*]}"
        return 0
    fi
    for name in "$@"; do
        case "$name" in
        web | gateway | workers) ;;
        *)
            svc_error "unknown service \"$name\": name web, gateway or workers (or none for all three)"
            return 2
            ;;
        esac
    done
    echo "$*"
}

svc_pid() {
    # The pid of a running service, from its PID file; a file left by a process that is gone (or
    # whose pid now belongs to another program) is removed.
    local file pid
    file=$(svc_pid_file "$1")
    [ -f "$file" ] || return 1
    pid=$(cat "$file" 2>/dev/null)
    case "$pid" in '' | *[!0-9]*) pid=0 ;; esac
    if [ "$pid" != 0 ] && [ -r "/proc/$pid/cmdline" ] &&
        tr '\0' ' ' <"/proc/$pid/cmdline" | grep -q -e 'manage.py' -e 'daphne' &&
        ! grep -q '^State:[[:space:]]*Z' "/proc/$pid/status" 2>/dev/null; then
        echo "$pid"
        return 0
    fi
    rm -f "$file"
    return 1
}

svc_rotate_log() {
    # At start: a log past CINDY_LOG_MAX_BYTES moves to NAME.log.1 (and .1 to .2, ...), keeping
    # CINDY_LOG_KEEP old ones.
    local log=$1 max=${CINDY_LOG_MAX_BYTES:-10485760} keep=${CINDY_LOG_KEEP:-5} i
    [ -f "$log" ] || return 0
    [ "$(stat -c %s "$log")" -gt "$max" ] || return 0
    rm -f "$log.$keep"
    for ((i = keep - 1; i >= 1; i--)); do
        [ -f "$log.$i" ] && mv "$log.$i" "$log.$((i + 1))"
    done
    [ "$keep" -ge 1 ] && mv "$log" "$log.1"
    rm -f "$log"
}

svc_check_settings() {
    local name value
    for name in CINDY_PORT CINDY_START_TIMEOUT CINDY_STOP_TIMEOUT CINDY_LOG_MAX_BYTES CINDY_LOG_KEEP; do
        value=${!name-}
        case "$value" in
        *[!0-9]*)
            svc_error "$name is \"$value\": set it to a whole number, or unset it for the default"
            return 2
            ;;
        esac
    done
}

svc_check_environment() {
    # Before any start: the settings load (SECRET_KEY, .env), the database answers and is migrated.
    local out
    if [ ! -f "${CINDY_ENV_FILE:-.env}" ] && [ -z "${SECRET_KEY:-}" ]; then
        svc_error "no ${CINDY_ENV_FILE:-.env} and no SECRET_KEY in the environment: copy .env.example to .env and set SECRET_KEY (and DATABASE_URL for MySQL)"
        return 1
    fi
    # One Django start for both (it takes seconds): `migrate --check` loads the settings, runs the
    # system checks, connects to the database, and exits 1 without a word when migrations are missing.
    if out=$($PY manage.py migrate --check --noinput 2>&1); then
        return 0
    fi
    if [ -z "$out" ]; then
        svc_error "the database has unapplied migrations: run $PY manage.py migrate"
    else
        svc_error "the settings or the database are not ready (manage.py migrate --check):"
        printf '%s\n' "$out" | tail -n 3 >&2
    fi
    return 1
}

svc_launch() {
    local name=$1 pid log
    log=$(svc_log_file "$name")
    svc_rotate_log "$log"
    # shellcheck disable=SC2046 # the command is split into words on purpose
    setsid $(svc_command "$name") </dev/null >>"$log" 2>&1 &
    pid=$!
    echo "$pid" >"$(svc_pid_file "$name")"
}

svc_check_port() {
    # The web server binds its port seconds after its start: find a taken port now. SO_REUSEADDR as
    # the server sets it, so a port left in TIME_WAIT by a previous run counts as free.
    local bind=${CINDY_BIND:-127.0.0.1} port=${CINDY_PORT:-8000}
    if ! $PY -c 'import socket, sys
s = socket.socket()
s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
try:
    s.bind((sys.argv[1], int(sys.argv[2])))
except OSError:
    sys.exit(1)' "$bind" "$port"; then
        svc_error "port $port on $bind is already in use (another Cindy, or another server): stop what listens there, or set CINDY_PORT=$((port + 1))"
        return 1
    fi
}

svc_wait_ready() {
    # Until the web server listens (when it was started), or it ends, for up to CINDY_START_TIMEOUT
    # seconds; then at least 2 s, by which time a gateway or worker pool that cannot start has ended.
    local names=$1 waited=0 timeout=${CINDY_START_TIMEOUT:-60} port=${CINDY_PORT:-8000}
    local host=${CINDY_BIND:-127.0.0.1}
    [ "$host" = 0.0.0.0 ] && host=127.0.0.1
    sleep 2
    case " $names " in *" web "*) ;; *) return 0 ;; esac
    while [ "$waited" -lt "$timeout" ] && svc_pid web >/dev/null; do
        if (exec 3<>"/dev/tcp/$host/$port") 2>/dev/null; then
            return 0
        fi
        sleep 1
        waited=$((waited + 1))
    done
}

svc_confirm() {
    # After the launch: a service that cannot start (a taken port, a bad setting) has ended by now.
    local name=$1 log pid
    log=$(svc_log_file "$name")
    if ! pid=$(svc_pid "$name"); then
        svc_error "$name stopped at once; the end of $log:"
        tail -n 15 "$log" >&2
        return 1
    fi
    svc_say "started $name (pid $pid, log $log)"
}

svc_stop_one() {
    # SIGTERM to the service's process group, up to CINDY_STOP_TIMEOUT seconds to finish, then SIGKILL.
    local name=$1 pid waited=0 timeout=${CINDY_STOP_TIMEOUT:-45}
    if ! pid=$(svc_pid "$name"); then
        svc_say "$name is not running"
        return 0
    fi
    kill -TERM -- "-$pid" 2>/dev/null || true
    while kill -0 -- "-$pid" 2>/dev/null && [ "$waited" -lt "$timeout" ]; do
        sleep 1
        waited=$((waited + 1))
    done
    if kill -0 -- "-$pid" 2>/dev/null; then
        svc_say "$name did not stop within $timeout s: killing it"
        kill -KILL -- "-$pid" 2>/dev/null || true
    fi
    rm -f "$(svc_pid_file "$name")"
    svc_say "stopped $name"
}

svc_start() {
    local names name running=() failed=0
    names=$(svc_names "$@") || return $?
    svc_check_settings || return $?
    mkdir -p "$CINDY_RUN_DIR" "$CINDY_LOG_DIR"
    for name in $names; do
        if svc_pid "$name" >/dev/null; then running+=("$name"); fi
    done
    if [ "${#running[@]}" -gt 0 ]; then
        svc_error "already running: ${running[*]} (./cindy status shows them; ./cindy restart restarts them)"
        return 1
    fi
    case " $names " in *" web "*) svc_check_port || return 1 ;; esac
    svc_check_environment || return 1
    for name in $names; do svc_launch "$name"; done
    svc_wait_ready "$names"
    for name in $names; do
        svc_confirm "$name" || failed=1
    done
    if [ "$failed" = 1 ]; then
        svc_say "stopping what did start"
        for name in $names; do svc_stop_one "$name" >/dev/null; done
        return 1
    fi
}

svc_stop() {
    local names name
    names=$(svc_names "$@") || return $?
    svc_check_settings || return $?
    for name in $names; do svc_stop_one "$name"; done
}

svc_status() {
    # LSB: 0 when every service named runs, 3 when any does not.
    local names name pid status=0
    names=$(svc_names "$@") || return $?
    for name in $names; do
        if pid=$(svc_pid "$name"); then
            svc_say "$name: running (pid $pid)"
        else
            svc_say "$name: stopped"
            status=3
        fi
    done
    return "$status"
}

svc_logs() {
    # The last lines of each service's log (CINDY_LOG_LINES, 50); -f follows them.
    local follow=0 names name files=()
    if [ "${1:-}" = -f ]; then
        follow=1
        shift
    fi
    names=$(svc_names "$@") || return $?
    for name in $names; do
        [ -f "$(svc_log_file "$name")" ] && files+=("$(svc_log_file "$name")")
    done
    if [ "${#files[@]}" = 0 ]; then
        svc_say "no logs yet under $CINDY_LOG_DIR"
        return 0
    fi
    if [ "$follow" = 1 ]; then
        exec tail -n "${CINDY_LOG_LINES:-50}" -F "${files[@]}"
    fi
    tail -n "${CINDY_LOG_LINES:-50}" "${files[@]}"
}
