#!/bin/bash
# CPU per sysbench oltp_read_only transaction of a real MySQL-family server,
# for examples/seed003-mysql-sysbench.toml's compute step: MariaDB (Debian
# has no MySQL) and sysbench, one client thread, the tables in the buffer
# pool, so that the time is the server's and the client's work alone
# (utime + stime of both over the run, divided by its transactions).
#
#   apt-get install mariadb-server sysbench
#   examples/mysql_cpu.sh [SECONDS]     # as root; a private server in a temp dir
set -eu
secs=${1:-30}
d=$(mktemp -d /tmp/mysql_cpu.XXXXXX)
trap 'kill $(cat $d/pid) 2>/dev/null; sleep 2; rm -rf $d' EXIT
mariadb-install-db --user=root --datadir=$d/data >/dev/null 2>&1
mariadbd --user=root --datadir=$d/data --socket=$d/sock --skip-networking \
  --innodb-buffer-pool-size=512M --log-error=$d/err.log --pid-file=$d/pid &
for _ in $(seq 30); do [ -S $d/sock ] && break; sleep 1; done
mariadb -S $d/sock -uroot -e "create database sb"
sb="sysbench /usr/share/sysbench/oltp_read_only.lua --db-driver=mysql --mysql-socket=$d/sock \
  --mysql-user=root --mysql-db=sb --tables=4 --table-size=100000 --threads=1"
$sb prepare >/dev/null
$sb --time=10 run >/dev/null               # warm the buffer pool
p=$(cat $d/pid); hz=$(getconf CLK_TCK)
read -r u0 s0 < <(awk '{print $14, $15}' /proc/$p/stat)
/usr/bin/time -f "%U %S" -o $d/client $sb --time=$secs run >$d/run.log
read -r u1 s1 < <(awk '{print $14, $15}' /proc/$p/stat)
read -r cu cs <$d/client
tx=$(awk '/transactions:/ {print $2}' $d/run.log)
awk -v tx=$tx -v hz=$hz -v su=$((u1 - u0)) -v ss=$((s1 - s0)) -v cu=$cu -v cs=$cs 'BEGIN {
  printf "%d transactions; per transaction: server user %.0f us, sys %.0f us; client user %.0f us, sys %.0f us; total %.0f us\n",
    tx, su / hz / tx * 1e6, ss / hz / tx * 1e6, cu / tx * 1e6, cs / tx * 1e6, (su / hz + ss / hz + cu + cs) / tx * 1e6 }'
