#!/usr/bin/env bash
# A private MariaDB server for tests, benchmarks and CI, on a free loopback port.
#   eval "$(scripts/mariadb.sh start)"   installs MariaDB if missing, starts it, exports
#                                        TEST_MYSQL_URL, MARIADB_PID and MARIADB_DIR
#   scripts/mariadb.sh stop              stops the server started above (by its pid) and removes its files
set -euo pipefail

case "${1:-}" in
start)
  if ! command -v mariadbd >/dev/null 2>&1; then
    echo "installing mariadb-server" >&2
    if [ "$(id -u)" = 0 ]; then SUDO=""; else SUDO="sudo"; fi
    $SUDO apt-get update -qq >&2
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq mariadb-server >&2
  fi
  # In memory where the machine has it: the tests make and drop a database each, and on tmpfs a file's
  # creation and every sync cost nothing.
  base=/tmp
  if [ -d /dev/shm ] && [ -w /dev/shm ]; then base=/dev/shm; fi
  dir=$(mktemp -d "$base/mariadb.XXXXXX")
  port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1]); s.close()')
  user_flag=()
  if [ "$(id -u)" = 0 ]; then user_flag=(--user=mysql); chown mysql "$dir"; fi
  mariadb-install-db "${user_flag[@]}" --datadir="$dir/data" --auth-root-authentication-method=normal --skip-test-db >"$dir/install.log" 2>&1
  [ "$(id -u)" = 0 ] && chown -R mysql "$dir"
  mariadbd --no-defaults "${user_flag[@]}" --datadir="$dir/data" --socket="$dir/sock" --port="$port" \
    --bind-address=127.0.0.1 --pid-file="$dir/pid" --max-connections=1000 --innodb-buffer-pool-size=256M \
    --innodb-flush-log-at-trx-commit=2 --skip-name-resolve >"$dir/server.log" 2>&1 &
  pid=$!
  for _ in $(seq 1 100); do
    mariadb-admin --socket="$dir/sock" ping >/dev/null 2>&1 && break
    sleep 0.1
  done
  mariadb --socket="$dir/sock" -e "CREATE USER 'app'@'127.0.0.1' IDENTIFIED BY 'app'; GRANT ALL ON *.* TO 'app'@'127.0.0.1';" >&2
  echo "export TEST_MYSQL_URL=mysql://app:app@127.0.0.1:$port/ MARIADB_PID=$pid MARIADB_DIR=$dir"
  ;;
stop)
  if [ -n "${MARIADB_PID:-}" ]; then
    kill "$MARIADB_PID" 2>/dev/null || true
    for _ in $(seq 1 100); do kill -0 "$MARIADB_PID" 2>/dev/null || break; sleep 0.1; done
  fi
  if [ -n "${MARIADB_DIR:-}" ] && [ -d "$MARIADB_DIR" ]; then rm -rf "$MARIADB_DIR"; fi
  ;;
*)
  echo "usage: scripts/mariadb.sh start|stop" >&2
  exit 2
  ;;
esac
