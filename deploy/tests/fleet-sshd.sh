#!/usr/bin/env bash
# The fleet playbook for real: ansible-playbook against a real sshd on
# 127.0.0.1 that serves several inventory names (deploy/README.md).
#
#   alpha, beta   this machine over SSH: measured with experiments/quick.toml
#   gamma         a closed port: unreachable on purpose
#   delta         a stand-in driver whose probe says "not ready"
#   epsilon       a stand-in driver whose sweep exits 1
#
# Run 1 is interrupted (the controller killed) while alpha's sweep runs; run 2
# must take over alpha's finished set instead of measuring it again, measure
# beta and record the other three as missing; run 3 must measure nothing;
# run 4 (the next day, alpha only) must not file a leftover copy of a set
# already fetched as that day's set.
# Then `analysis fleet` (once it exists) must answer over the dataset and
# name gamma as missing.
#
# Needs root (sshd, the driver), /usr/sbin/sshd and ansible-playbook
# (Debian: openssh-server, ansible). Without them it skips with exit 0,
# unless PERF_TESTS=require, when it fails.
#
# Env: DRIVER    driver binary (default: the static one from
#                tools/build-static.sh if built, else the release build)
#      ANALYSIS  analysis binary (default: the release build)
#      KEEP=1    keep the temp folder (fleet dataset, logs) for a look
set -uo pipefail

repo=$(cd "$(dirname "$0")/../.." && pwd)
target="${CARGO_TARGET_DIR:-$HOME/.cache/perf-overhead/target}"
if [ -z "${DRIVER:-}" ]; then
    if [ -x "$target/dist/driver" ]; then DRIVER="$target/dist/driver"; else DRIVER="$target/release/driver"; fi
fi
ANALYSIS="${ANALYSIS:-$target/release/analysis}"

skip() {
    if [ "${PERF_TESTS:-}" = require ]; then
        echo "FAIL: $1 (PERF_TESTS=require)" >&2
        exit 1
    fi
    echo "SKIP: $1"
    exit 0
}
[ "$(id -u)" = 0 ] || skip "not root: sshd and the driver need root"
command -v ansible-playbook >/dev/null || skip "ansible-playbook missing (apt-get install ansible)"
[ -x /usr/sbin/sshd ] || skip "/usr/sbin/sshd missing (apt-get install openssh-server)"
command -v ssh-keygen >/dev/null || skip "ssh-keygen missing (apt-get install openssh-client)"
[ -x "$DRIVER" ] || { echo "FAIL: DRIVER=$DRIVER is not an executable file" >&2; exit 1; }

t0=$(date +%s)
T=$(mktemp -d /tmp/fleet-sshd-test.XXXXXX)
sshd_pid=""
made_run_sshd=0
cleanup() {
    [ -n "$sshd_pid" ] && kill "$sshd_pid" 2>/dev/null && wait "$sshd_pid" 2>/dev/null
    [ "$made_run_sshd" = 1 ] && rmdir /run/sshd 2>/dev/null
    if [ "${KEEP:-}" = 1 ]; then echo "kept $T"; else rm -rf "$T"; fi
}
trap cleanup EXIT

fails=0
pass() { echo "PASS: $*"; }
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }
check() { # check "what" command...
    local what=$1; shift
    if "$@"; then pass "$what"; else fail "$what"; fi
}

free_port() {
    /usr/bin/python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'
}

# --- a real sshd: its own host key, config and authorized_keys ----------
ssh-keygen -q -t ed25519 -N '' -C fleet-test-host -f "$T/host_key"
ssh-keygen -q -t ed25519 -N '' -C fleet-test-client -f "$T/client_key"
cp "$T/client_key.pub" "$T/authorized_keys"
port=$(free_port)
closed=$(free_port)
cat > "$T/sshd_config" <<EOF
ListenAddress 127.0.0.1
Port $port
HostKey $T/host_key
PidFile $T/sshd.pid
AuthorizedKeysFile $T/authorized_keys
PermitRootLogin prohibit-password
PubkeyAuthentication yes
PasswordAuthentication no
KbdInteractiveAuthentication no
UsePAM no
# The key file lives under /tmp (mode 1777), which StrictModes refuses.
StrictModes no
Subsystem sftp internal-sftp
EOF
if [ ! -d /run/sshd ]; then mkdir -m 0755 /run/sshd && made_run_sshd=1; fi
/usr/sbin/sshd -D -e -f "$T/sshd_config" 2>"$T/sshd.log" &
sshd_pid=$!
ssh_opts=(-o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null -o BatchMode=yes
          -o ConnectTimeout=5 -o LogLevel=ERROR -i "$T/client_key" -p "$port")
for _ in $(seq 50); do
    ssh "${ssh_opts[@]}" root@127.0.0.1 true 2>/dev/null && break
    sleep 0.2
done
if ! ssh "${ssh_opts[@]}" root@127.0.0.1 true; then
    echo "FAIL: sshd on 127.0.0.1:$port does not let the test key in; its log:" >&2
    cat "$T/sshd.log" >&2
    exit 1
fi
echo "sshd: pid $sshd_pid on 127.0.0.1:$port (gamma's port $closed is closed)"

# --- stand-in drivers for the probe and sweep failures -------------------
cat > "$T/driver-unready" <<'EOF'
#!/bin/sh
[ "$1" = probe ] && { echo '{"hostname":"delta","ready":false,"missing":["perf_event_open: EACCES (stand-in driver of the test)"]}'; exit 1; }
echo "stand-in driver: unexpected $*" >&2; exit 2
EOF
cat > "$T/driver-sweep-fails" <<'EOF'
#!/bin/sh
[ "$1" = probe ] && { echo '{"hostname":"epsilon","ready":true,"missing":[]}'; exit 0; }
echo "error: stand-in sweep failure on $(hostname)" >&2; exit 1
EOF
chmod +x "$T/driver-unready" "$T/driver-sweep-fails"

# --- the inventory and the play's settings --------------------------------
mkdir -p "$T/remote" "$T/fleet"
cat > "$T/inventory.ini" <<EOF
[fleet]
alpha   ansible_host=127.0.0.1 ansible_port=$port
beta    ansible_host=127.0.0.1 ansible_port=$port
gamma   ansible_host=127.0.0.1 ansible_port=$closed
delta   ansible_host=127.0.0.1 ansible_port=$port driver_bin=$T/driver-unready
epsilon ansible_host=127.0.0.1 ansible_port=$port driver_bin=$T/driver-sweep-fails

[fleet:vars]
ansible_user=root
ansible_ssh_private_key_file=$T/client_key
ansible_ssh_common_args='-o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null -o ConnectTimeout=5'
ansible_python_interpreter=/usr/bin/python3
driver_bin=$DRIVER
EOF
: > "$T/ansible.cfg"
export ANSIBLE_CONFIG="$T/ansible.cfg" ANSIBLE_NOCOLOR=1 ANSIBLE_RETRY_FILES_ENABLED=0
export ANSIBLE_LOCAL_TEMP="$T/ansible-local" ANSIBLE_SSH_CONTROL_PATH_DIR="$T/cp"
export ANSIBLE_HOST_KEY_CHECKING=False
# The "hosts" are this machine: their work folders go to $T/remote, so
# "nothing left behind" is an empty folder.
play=(ansible-playbook -i "$T/inventory.ini" "$repo/deploy/fleet.yml"
      -e "fleet_dir=$T/fleet" -e "experiment=$repo/experiments/quick.toml"
      -e "remote_work_parent=$T/remote")
date_dir="date=$(date -u +%F)"

sets_of() { # the set folders (not .partial-*) of host $1
    find "$T/fleet/host=$1/$date_dir" -mindepth 1 -maxdepth 1 -type d ! -name '.*' -printf '%f\n' 2>/dev/null | sort
}
json_field() { # json_field FILE KEY
    /usr/bin/python3 -c 'import json,sys; print(json.load(open(sys.argv[1])).get(sys.argv[2], ""))' "$1" "$2" 2>/dev/null
}
sweep_running() { # a driver sweep from the test's work folders still runs
    pgrep -f "^$T/remote/.*/driver sweep" >/dev/null
}

# --- run 1, interrupted while alpha's sweep runs --------------------------
echo "== run 1: killed during alpha's sweep"
setsid "${play[@]}" >"$T/run1.log" 2>&1 &
play_pid=$!
alpha_remote=""
for _ in $(seq 600); do
    alpha_remote=$(find "$T/remote" -mindepth 3 -maxdepth 3 -name manifest.json -print -quit 2>/dev/null)
    [ -n "$alpha_remote" ] && break
    kill -0 "$play_pid" 2>/dev/null || break
    sleep 0.2
done
if [ -z "$alpha_remote" ]; then
    fail "run 1: alpha's sweep started on the host (no manifest.json under $T/remote)"
    tail -30 "$T/run1.log"
    exit 1
fi
kill -KILL -- "-$play_pid" 2>/dev/null
wait "$play_pid" 2>/dev/null
alpha_set=$(basename "$(dirname "$alpha_remote")")
echo "run 1 killed; alpha's sweep goes on on the host: $alpha_set"
for _ in $(seq 300); do sweep_running || break; sleep 1; done
check "run 1: alpha's orphaned sweep finished with a complete manifest" \
    test "$(json_field "$alpha_remote" status)" = complete

# --- run 2: takes over alpha's set, measures beta, records the rest -------
echo "== run 2"
s=$(date +%s)
"${play[@]}" >"$T/run2.log" 2>&1
rc2=$?
echo "run 2: exit $rc2 in $(( $(date +%s) - s )) s"
grep -E '^(alpha|beta|gamma|delta|epsilon) +:' "$T/run2.log"
check "run 2: ansible-playbook exits 0 (failures are recorded, not fatal)" test "$rc2" = 0
check "run 2: alpha's set is the one the killed run left on the host, not measured again" \
    test "$(sets_of alpha)" = "$alpha_set"
for h in alpha beta; do
    n=$(sets_of "$h" | wc -l)
    set_dir="$T/fleet/host=$h/$date_dir/$(sets_of "$h" | head -1)"
    check "run 2: $h has exactly one set ($n)" test "$n" = 1
    check "run 2: $h's manifest.json says complete" test "$(json_field "$set_dir/manifest.json" status)" = complete
    check "run 2: $h was swept with --scope cpu" \
        test "$(/usr/bin/python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["options"]["scope"])' "$set_dir/manifest.json" 2>/dev/null)" = cpu
    check "run 2: $h's set has runs.csv and report/answer.txt" test -s "$set_dir/runs.csv" -a -s "$set_dir/report/answer.txt"
    check "run 2: $h's raw events/ was left on the host" test ! -e "$set_dir/events"
    check "run 2: $h has no missing.json" test ! -e "$T/fleet/host=$h/$date_dir/missing.json"
done
for pair in gamma:unreachable delta:probe epsilon:sweep; do
    h=${pair%%:*}; stage=${pair#*:}
    m="$T/fleet/host=$h/$date_dir/missing.json"
    check "run 2: $h has missing.json with stage $stage" test "$(json_field "$m" stage)" = "$stage"
    check "run 2: $h's missing.json names host and date" \
        test "$(json_field "$m" host)/$(json_field "$m" date)" = "$h/${date_dir#date=}"
    check "run 2: $h has no set" test -z "$(sets_of "$h")"
    echo "      $h: $(json_field "$m" reason)"
done
check "run 2: delta's reason is the probe's" grep -q 'EACCES (stand-in driver' "$T/fleet/host=delta/$date_dir/missing.json"
check "run 2: epsilon's reason has the exit status and stderr" \
    grep -q 'exited 1: error: stand-in sweep failure' "$T/fleet/host=epsilon/$date_dir/missing.json"
check "run 2: no .partial-* left in the dataset" test -z "$(find "$T/fleet" -name '.partial-*')"
check "run 2: nothing left on the host (work folders, Ansible temp files)" test -z "$(ls -A "$T/remote")"
ls -A "$T/remote"

# --- run 3: measures nothing ----------------------------------------------
echo "== run 3"
before=$(cd "$T/fleet" && find . -path '*/.*' -prune -o -type d -print | sort)
s=$(date +%s)
"${play[@]}" >"$T/run3.log" 2>&1
rc3=$?
took=$(( $(date +%s) - s ))
echo "run 3: exit $rc3 in $took s"
after=$(cd "$T/fleet" && find . -path '*/.*' -prune -o -type d -print | sort)
check "run 3: ansible-playbook exits 0" test "$rc3" = 0
check "run 3: the same set folders as before" test "$before" = "$after"
check "run 3: alpha and beta skipped as already measured" \
    test "$(grep -c 'already in the dataset' "$T/run3.log")" = 2
check "run 3: no sweep ran on alpha or beta" \
    bash -c "! grep -A3 'TASK \[Run the sweep\]' '$T/run3.log' | grep -qE '(alpha|beta)'"
check "run 3: took under 60 s ($took s)" test "$took" -lt 60
check "run 3: nothing left on the host" test -z "$(ls -A "$T/remote")"

# --- run 4: a leftover of a set already fetched is not filed again ---------
# A play cut off after the rename but before the host's cleanup leaves the
# set on the host too. A later run (another date) must not take it as that
# date's set: it removes it and measures. The stand-in driver whose sweep
# fails stands for that measurement, so no sweep runs.
echo "== run 4: alpha, next day, with a leftover of its fetched set on the host"
alpha_today="$T/fleet/host=alpha/$date_dir/$alpha_set"
mkdir -p "$T/remote/perf-overhead-fleet.alpha.leftover"
cp -a "$alpha_today" "$T/remote/perf-overhead-fleet.alpha.leftover/"
next=$(date -u -d tomorrow +%F)
"${play[@]}" -e fleet_hosts=alpha -e "fleet_date=$next" -e "driver_bin=$T/driver-sweep-fails" >"$T/run4.log" 2>&1
rc4=$?
m4="$T/fleet/host=alpha/date=$next/missing.json"
check "run 4: ansible-playbook exits 0 ($rc4)" test "$rc4" = 0
check "run 4: the stale set was not filed under date=$next (it measured: stage sweep)" \
    test "$(json_field "$m4" stage)/$(json_field "$m4" date)" = "sweep/$next"
check "run 4: no set under date=$next" \
    test -z "$(find "$T/fleet/host=alpha/date=$next" -mindepth 1 -maxdepth 1 -type d)"
check "run 4: the leftover was removed from the host" test -z "$(ls -A "$T/remote")"
check "run 4: alpha's set of $date_dir is still there" test "$(sets_of alpha)" = "$alpha_set"
check "run 4: only alpha was in the play" test ! -e "$T/fleet/host=beta/date=$next"
# Out of the dataset again: analysis fleet below takes each host's newest date.
rm -rf "$T/fleet/host=alpha/date=$next"

# --- analysis fleet over what came back ------------------------------------
if "$ANALYSIS" fleet --help >/dev/null 2>&1; then
    for h in alpha beta; do
        check "$h's set has summary.parquet" test -s "$T/fleet/host=$h/$date_dir/$(sets_of $h | head -1)/summary.parquet"
    done
    echo "== $ANALYSIS fleet $T/fleet"
    (cd "$T" && "$ANALYSIS" fleet "$T/fleet") >"$T/fleet.out" 2>&1
    rcf=$?
    cat "$T/fleet.out"
    check "analysis fleet exits 0 (exit $rcf)" test "$rcf" = 0
    check "analysis fleet names gamma as missing" \
        bash -c "grep -qi gamma '$T/fleet.out' && grep -qi missing '$T/fleet.out'"
    check "analysis fleet answers for alpha and beta (fleet.csv: 2 hosts)" \
        bash -c "sed -n 2p '$T/fleet/report/fleet.csv' | grep -q '^fleet,2,'"
    check "analysis fleet wrote report.md, report.html and the figure" \
        test -s "$T/fleet/report/report.html" -a -s "$T/fleet/report/fleet_cost_per_sample.svg"
else
    echo "NOTE: '$ANALYSIS fleet --help' failed (no such binary, or no fleet command yet): summary.parquet and analysis fleet not checked"
fi

echo "fleet-sshd: $fails failed, $(( $(date +%s) - t0 )) s"
if [ "$fails" -gt 0 ]; then
    echo "logs: run1.log run2.log run3.log in $T (KEEP=1 keeps them)"
    tail -60 "$T/run2.log"
    exit 1
fi
