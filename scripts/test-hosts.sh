#!/usr/bin/env bash
# A lab of N hosts on this machine: network namespaces on a bridge, each with a real sshd.
#
#   scripts/test-hosts.sh up N      # idempotent: hosts h1..hN, prints how to reach them
#   scripts/test-hosts.sh down      # ends the sshds, removes the namespaces, the bridge, the files
#   scripts/test-hosts.sh status
#
# Each host hN is a network namespace <prefix>-hN with address <net>.(10+N)/24 on the bridge
# <prefix>-br (the control machine is <net>.1) and no route out. Its sshd runs inside
# `unshare --mount --propagation private`, with private, empty directories bound over
# /var/lib/pgrig, /opt, /tmp, /root, /home, /usr/local and /usr/lib/postgresql, and a private
# copy of /etc (its own users): a fresh host with python3 and nothing else of pgrig's.
# root logs in with the rig's client key; the user `rigu` (not root, no sudo) too.
#
# What the rig writes, in <dir> (default /var/lib/pgrig-rig):
#   client/id_ed25519     the client key (never visible inside the hosts)
#   known_hosts           the hosts' keys, for StrictHostKeyChecking
#   inventory.ini         an Ansible inventory of the hosts (`pgrig host import` reads it)
#
# For fault tests: PGRIG_RIG_NO_PYTHON="3" gives host h3 no python3, PGRIG_RIG_SMALL_OPT="2"
# gives h2 a 64 MiB /opt (a disk that fills up).
#
# Several rigs can live side by side: PGRIG_RIG_NET (default 10.231.0), PGRIG_RIG_PREFIX
# (default pgrig; at most 8 characters) and PGRIG_RIG_DIR choose the subnet, the names and
# the directory.
#
# PGRIG_RIG_TMPFS=1 keeps each host's files in memory (a tmpfs per host, up to 4 GiB, about
# 1 GiB once provisioned): faster to provision and gone at once with `down` (the test suite's
# rigs use it; a provisioned host's files otherwise take many seconds to delete).
set -euo pipefail

NET="${PGRIG_RIG_NET:-10.231.0}"
PREFIX="${PGRIG_RIG_PREFIX:-pgrig}"
DIR="${PGRIG_RIG_DIR:-/var/lib/pgrig-rig}"
BRIDGE="${PREFIX}-br"
PRIVATE_DIRS=(/var/lib/pgrig /opt /tmp /root /home /usr/local /usr/lib/postgresql)

die() { echo "test-hosts: $*" >&2; exit 1; }

[ "$(id -u)" -eq 0 ] || die "needs root (network namespaces, a bridge, sshd)"
[ "${#PREFIX}" -le 8 ] || die "PGRIG_RIG_PREFIX must be at most 8 characters (interface names)"
[[ "$NET" =~ ^[0-9]+\.[0-9]+\.[0-9]+$ ]] || die "PGRIG_RIG_NET must look like 10.231.0"
[ -x /usr/sbin/sshd ] || die "no /usr/sbin/sshd: install openssh-server (scripts/setup.sh)"
command -v unshare >/dev/null || die "no unshare (util-linux)"

ns_of() { echo "${PREFIX}-h$1"; }
addr_of() { echo "${NET}.$((10 + $1))"; }

sshd_alive() {  # $1: host dir
  local pid
  [ -f "$1/sshd.pid" ] || return 1
  pid="$(cat "$1/sshd.pid")"
  [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null
}

ensure_bridge() {
  if ! ip link show "$BRIDGE" >/dev/null 2>&1; then
    ip link add "$BRIDGE" type bridge
  fi
  ip addr replace "${NET}.1/24" dev "$BRIDGE"
  ip link set "$BRIDGE" up
}

ensure_client_key() {
  mkdir -p "$DIR/client" "$DIR/empty"
  chmod 700 "$DIR/client"
  chmod 755 "$DIR" "$DIR/empty"
  if [ ! -f "$DIR/client/id_ed25519" ]; then
    ssh-keygen -q -t ed25519 -N '' -C "pgrig-rig" -f "$DIR/client/id_ed25519"
  fi
}

make_etc() {  # $1: host dir; a private /etc with its own user rigu (not root, no sudo)
  local etc="$1/fs/etc"
  [ -d "$etc" ] && return 0
  cp -a /etc "$etc.tmp"
  if ! grep -q '^rigu:' "$etc.tmp/passwd"; then
    echo "rigu:x:2001:2001:pgrig rig user:/home/rigu:/bin/sh" >>"$etc.tmp/passwd"
    echo "rigu:x:2001:" >>"$etc.tmp/group"
    echo "rigu:*:19000:0:99999:7:::" >>"$etc.tmp/shadow"
  fi
  mv "$etc.tmp" "$etc"
}

ensure_host() {  # $1: index
  local i="$1" ns addr veth hdir fs d name
  ns="$(ns_of "$i")"
  addr="$(addr_of "$i")"
  veth="${PREFIX}-v$i"
  hdir="$DIR/hosts/h$i"
  fs="$hdir/fs"
  mkdir -p "$hdir"
  chmod 755 "$DIR/hosts" "$hdir"
  if [ "${PGRIG_RIG_TMPFS:-}" = 1 ] && ! mountpoint -q "$fs"; then
    mkdir -p "$fs"
    mount -t tmpfs -o mode=755,size=4g "pgrig-rig-$ns" "$fs"
  fi

  if ! ip netns list | grep -qw "^$ns"; then
    ip netns add "$ns"
  fi
  if ! ip link show "$veth" >/dev/null 2>&1; then
    ip link add "$veth" type veth peer name eth0 netns "$ns"
  fi
  ip link set "$veth" master "$BRIDGE"
  ip link set "$veth" up
  ip -n "$ns" link set lo up
  ip -n "$ns" addr replace "$addr/24" dev eth0
  ip -n "$ns" link set eth0 up

  for d in "${PRIVATE_DIRS[@]}"; do
    name="${d#/}"
    mkdir -p "$fs/${name//\//-}"
  done
  chmod 1777 "$fs/tmp"
  chmod 700 "$fs/root"
  mkdir -p "$fs/root/.ssh" "$fs/home/rigu/.ssh"
  chmod 700 "$fs/root/.ssh"
  cp "$DIR/client/id_ed25519.pub" "$fs/root/.ssh/authorized_keys"
  cp "$DIR/client/id_ed25519.pub" "$fs/home/rigu/.ssh/authorized_keys"
  chown -R 2001:2001 "$fs/home/rigu"
  chmod 700 "$fs/home/rigu/.ssh"
  make_etc "$hdir"

  [ -f "$hdir/ssh_host_ed25519_key" ] ||
    ssh-keygen -q -t ed25519 -N '' -C "$ns" -f "$hdir/ssh_host_ed25519_key"
  cat >"$hdir/sshd_config" <<EOF
ListenAddress $addr
Port 22
HostKey $hdir/ssh_host_ed25519_key
PidFile $hdir/sshd.pid
PermitRootLogin prohibit-password
PubkeyAuthentication yes
PasswordAuthentication no
KbdInteractiveAuthentication no
UsePAM no
StrictModes yes
AuthorizedKeysFile .ssh/authorized_keys
Subsystem sftp internal-sftp
MaxSessions 200
MaxStartups 200:30:400
ClientAliveInterval 15
EOF

  if ! sshd_alive "$hdir"; then
    mkdir -p /run/sshd
    local binds="" d2
    for d in "${PRIVATE_DIRS[@]}"; do
      name="${d#/}"
      d2="$fs/${name//\//-}"
      mkdir -p "$d"
      binds+="mount --bind '$d2' '$d' && "
    done
    local faults=""
    if [[ " ${PGRIG_RIG_NO_PYTHON:-} " == *" $i "* ]]; then
      for py in /usr/bin/python3*; do
        [ -L "$py" ] || faults+="mount --bind /dev/null '$py' && "
      done
    fi
    if [[ " ${PGRIG_RIG_SMALL_OPT:-} " == *" $i "* ]]; then
      faults+="mount -t tmpfs -o size=64m pgrig-rig-opt /opt && "
    fi
    # The client key's directory is hidden from the hosts (keys never reach a host).
    ip netns exec "$ns" unshare --mount --uts --propagation private sh -c "
      hostname h$i &&
      ${binds} ${faults} mount --bind '$fs/etc' /etc &&
      mount --bind '$DIR/empty' '$DIR/client' &&
      exec /usr/sbin/sshd -f '$hdir/sshd_config' -E '$hdir/sshd.log'"
    for _ in $(seq 50); do
      sshd_alive "$hdir" && break
      sleep 0.1
    done
    sshd_alive "$hdir" || die "sshd of $ns did not start (see $hdir/sshd.log)"
  fi
  echo "$addr $(cut -d' ' -f1,2 "$hdir/ssh_host_ed25519_key.pub")" >>"$DIR/known_hosts.tmp"
  printf 'h%s ansible_host=%s ansible_user=root ansible_port=22\n' "$i" "$addr" >>"$DIR/inventory.tmp"
}

up() {
  local n="${1:-}"
  [[ "$n" =~ ^[1-9][0-9]?$ ]] || die "usage: test-hosts.sh up N (1..99)"
  mkdir -p "$DIR"
  (
    flock 9
    ensure_client_key
    ensure_bridge
    : >"$DIR/known_hosts.tmp"
    printf '[rig]\n' >"$DIR/inventory.tmp"
    local i
    for i in $(seq 1 "$n"); do ensure_host "$i"; done
    # Hosts above N from an earlier `up` stay listed while they run.
    for hdir in "$DIR"/hosts/h*; do
      [ -d "$hdir" ] || continue
      i="${hdir##*/h}"
      [ "$i" -le "$n" ] && continue
      sshd_alive "$hdir" && ensure_host "$i"
    done
    printf '\n[rig:vars]\nansible_ssh_private_key_file=%s\n' "$DIR/client/id_ed25519" >>"$DIR/inventory.tmp"
    printf "ansible_ssh_common_args='-o UserKnownHostsFile=%s -o StrictHostKeyChecking=yes'\n" \
      "$DIR/known_hosts" >>"$DIR/inventory.tmp"
    mv "$DIR/known_hosts.tmp" "$DIR/known_hosts"
    mv "$DIR/inventory.tmp" "$DIR/inventory.ini"
  ) 9>"$DIR/.lock"
  status
}

status() {
  [ -f "$DIR/inventory.ini" ] || { echo "no rig in $DIR"; return 0; }
  local hdir i state
  for hdir in "$DIR"/hosts/h*; do
    [ -d "$hdir" ] || continue
    i="${hdir##*/h}"
    state=down
    sshd_alive "$hdir" && state=up
    echo "h$i $(addr_of "$i") $(ns_of "$i") sshd:$state"
  done
  echo "identity:    $DIR/client/id_ed25519"
  echo "known_hosts: $DIR/known_hosts"
  echo "inventory:   $DIR/inventory.ini"
  echo "e.g.: pgrig host import $DIR/inventory.ini"
}

down() {
  local hdir ns pid veth i
  if [ -d "$DIR/hosts" ]; then
    for hdir in "$DIR"/hosts/h*; do
      [ -d "$hdir" ] || continue
      if sshd_alive "$hdir"; then
        pid="$(cat "$hdir/sshd.pid")"
        kill "$pid" 2>/dev/null || true
      fi
    done
  fi
  for ns in $(ip netns list | awk '{print $1}' | grep -E "^${PREFIX}-h[0-9]+$" || true); do
    # Every process left in the namespace (sessions, servers a test left behind) ends with it.
    for pid in $(ip netns pids "$ns" 2>/dev/null); do kill -9 "$pid" 2>/dev/null || true; done
    ip netns delete "$ns"
  done
  for veth in $(ip -o link show | awk -F': ' '{print $2}' | sed 's/@.*//' |
    grep -E "^${PREFIX}-v[0-9]+$" || true); do
    ip link delete "$veth" 2>/dev/null || true
  done
  ip link show "$BRIDGE" >/dev/null 2>&1 && ip link delete "$BRIDGE"
  for hdir in "$DIR"/hosts/h*; do  # PGRIG_RIG_TMPFS: a host's files vanish with their tmpfs
    [ -d "$hdir/fs" ] && mountpoint -q "$hdir/fs" && { umount "$hdir/fs" || umount -l "$hdir/fs"; }
  done
  rm -rf "$DIR"
  echo "rig down ($DIR removed)"
}

case "${1:-}" in
  up) up "${2:-}" ;;
  down) down ;;
  status) status ;;
  *) die "usage: test-hosts.sh up N | down | status" ;;
esac
