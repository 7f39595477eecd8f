#!/usr/bin/env bash
# Set up and run Cindy's test suite.
#   ./test.sh [--mariadb] [PYTEST ARGS...]
# The tests run on four processes (pytest-xdist); CINDY_TEST_WORKERS=N changes that, 0 means one.
# SQLite by default; --mariadb (or CINDY_TEST_DB=mariadb) runs the same suite on MariaDB at
# 127.0.0.1:3306 as root without a password, starting the server if it is installed but not running.
# As root, missing Debian packages (chromium for the browser tests; promtool, from prometheus, to check
# the /metrics exposition; the MySQL client headers, which the MariaDB driver builds against) are
# installed with apt-get. The driver is installed on SQLite runs too: the cwimport tests read an
# original installation's MySQL database, whichever database Cindy itself uses.
set -euo pipefail
cd "$(dirname "$0")"
. scripts/venv.sh

DB=${CINDY_TEST_DB:-sqlite}
PYTEST_ARGS=()
for arg in "$@"; do
    case "$arg" in
    --mariadb) DB=mariadb ;;
    --sqlite) DB=sqlite ;;
    *) PYTEST_ARGS+=("$arg") ;;
    esac
done
case "$DB" in
sqlite | mariadb) ;;
*)
    echo "error: CINDY_TEST_DB is \"$DB\": use sqlite or mariadb" >&2
    exit 2
    ;;
esac

missing=()
[ -x /usr/bin/chromium ] || missing+=(chromium)
[ -x /usr/bin/promtool ] || missing+=(prometheus)
command -v redis-server >/dev/null 2>&1 || missing+=(redis-server)
for pkg in default-libmysqlclient-dev pkg-config build-essential python3-dev; do
    dpkg -s "$pkg" >/dev/null 2>&1 || missing+=("$pkg")
done
if [ "$DB" = mariadb ]; then
    # The multi-host placement test (engine/tests/test_multihost.py) links network namespaces with
    # veth pairs (iproute2) and forwards MariaDB and Redis into them (socat).
    for pkg in socat iproute2; do
        dpkg -s "$pkg" >/dev/null 2>&1 || missing+=("$pkg")
    done
fi
cindy_apt_install "${missing[@]}"

cindy_venv requirements/test.txt requirements/mysql.txt

mariadb_ping() {
    local client
    client=$(command -v mariadb-admin || command -v mysqladmin || true)
    if [ -n "$client" ]; then
        "$client" --protocol=tcp -h 127.0.0.1 -P 3306 -u root ping >/dev/null 2>&1
    else
        .venv/bin/python -c 'import MySQLdb; MySQLdb.connect(host="127.0.0.1", port=3306, user="root").close()' \
            >/dev/null 2>&1
    fi
}

# The channel-layer tests also run on Redis (127.0.0.1:6379): start a throwaway server if none answers.
redis_ping() {
    .venv/bin/python -c 'import redis; redis.Redis(host="127.0.0.1", port=6379, socket_timeout=2).ping()' \
        >/dev/null 2>&1
}
if ! redis_ping && command -v redis-server >/dev/null 2>&1; then
    echo "Starting Redis"
    redis-server --daemonize yes --bind 127.0.0.1 --port 6379 --save "" --appendonly no \
        --dir /tmp --logfile /tmp/cindy-test-redis.log
    for _ in $(seq 1 30); do
        redis_ping && break
        sleep 0.5
    done
fi

# MariaDB holds Cindy's test database with --mariadb, and on both runs the original installation's
# database that the cwimport tests read: start the installed server if none answers.
if ! mariadb_ping && [ -x /usr/sbin/mariadbd ] && [ "$(id -u)" = 0 ]; then
    echo "Starting MariaDB"
    install -d -o mysql -g mysql /run/mysqld 2>/dev/null || true
    start-stop-daemon --start --oknodo --background --exec /usr/sbin/mariadbd -- --user=mysql
    for _ in $(seq 1 60); do
        mariadb_ping && break
        sleep 1
    done
fi
if [ "$DB" = mariadb ]; then
    if ! mariadb_ping; then
        echo "error: MariaDB does not answer on 127.0.0.1:3306 as root without a password." >&2
        echo "       Install and start it (apt-get install mariadb-server), or run ./test.sh without --mariadb." >&2
        exit 1
    fi
    # Where TIME_ZONE is not UTC, Django converts datetimes in the database (CONVERT_TZ: the admin's date
    # drill-down, dates by day), which needs the server's time zone tables: load them once if empty.
    client=$(command -v mariadb || command -v mysql || true)
    tzload=$(command -v mariadb-tzinfo-to-sql || command -v mysql_tzinfo_to_sql || true)
    if [ -n "$client" ] && [ -n "$tzload" ] && [ -d /usr/share/zoneinfo ] &&
        [ "$("$client" --protocol=tcp -h 127.0.0.1 -P 3306 -u root -N -e 'select count(*) from mysql.time_zone_name')" = 0 ]; then
        echo "Loading MariaDB's time zone tables"
        "$tzload" /usr/share/zoneinfo 2>/dev/null | "$client" --protocol=tcp -h 127.0.0.1 -P 3306 -u root mysql
    fi
    export DATABASE_URL=mysql://root@127.0.0.1:3306/cindy
    echo "Testing on MariaDB ($DATABASE_URL)"
else
    unset DATABASE_URL
    echo "Testing on SQLite"
fi

# Tests run on CINDY_TEST_WORKERS processes (pytest-xdist; 4 by default, 0 for one process), a test
# file to a process, unless the arguments choose (-n, -p no:xdist). xdist hands out the files with the
# most tests first; docs/testing.md says why no other order is forced.
XDIST=()
case " ${PYTEST_ARGS[*]-} " in
*" -n"* | *"no:xdist"* | *"--numprocesses"*) ;;
*) [ "${CINDY_TEST_WORKERS:-4}" = 0 ] || XDIST=(-n "${CINDY_TEST_WORKERS:-4}" --dist loadfile) ;;
esac

# Bytecode is written and reused: with PYTHONDONTWRITEBYTECODE set (some machines set it), every
# process the tests start (hundreds of gateways, workers, sites and shells) compiled Cindy's modules
# afresh, and every test process rewrote and compiled every test module (about 10 s of CPU each).
unset PYTHONDONTWRITEBYTECODE

set +e
.venv/bin/python -m pytest ${XDIST[@]+"${XDIST[@]}"} ${PYTEST_ARGS[@]+"${PYTEST_ARGS[@]}"}
status=$?
set -e
if [ "$status" = 5 ]; then
    echo "error: pytest collected no tests (exit status 5): check the arguments: ${PYTEST_ARGS[*]}" >&2
fi
exit "$status"
