#!/bin/sh
# Creates the unprivileged OS user that runs PostgreSQL when Stator (or its tests) run as root.
# PostgreSQL refuses to run as root. Idempotent: does nothing when the user exists.
# Usage: scripts/ensure-pg-user.sh [user]   (default: postgres)
set -eu
user="${1:-postgres}"
if id -u "$user" >/dev/null 2>&1; then
  echo "OS user $user exists (uid $(id -u "$user"))"
  exit 0
fi
if [ "$(id -u)" -ne 0 ]; then
  echo "OS user $user is missing and only root can create it" >&2
  exit 1
fi
useradd --system --user-group --home-dir /var/lib/postgresql --shell /bin/sh "$user"
echo "created OS user $user (uid $(id -u "$user"))"
