#!/bin/sh
# HAProxy's external check of one Galera node (docs/deployment/haproxy.cfg): healthy only while the
# node is in the primary component and synced. HAProxy passes the server's address and port as
# $3 and $4; the check logs in as the password-less `haproxy` user, which needs no grant (SHOW STATUS).
state=$(mariadb --host="$3" --port="$4" --user=haproxy --connect-timeout=1 --batch --skip-column-names \
  --execute="show status where variable_name in ('wsrep_cluster_status', 'wsrep_local_state_comment', 'wsrep_ready')" 2>/dev/null) || exit 1
echo "$state" | grep -q '^wsrep_cluster_status[[:space:]]*Primary$' || exit 1
echo "$state" | grep -q '^wsrep_local_state_comment[[:space:]]*Synced$' || exit 1
echo "$state" | grep -q '^wsrep_ready[[:space:]]*ON$' || exit 1
