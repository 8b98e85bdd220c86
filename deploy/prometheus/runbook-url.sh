#!/bin/sh
# Prints the address of docs/runbooks.md in the repository this checkout was cloned from, at the
# checked-out commit: what the alerts' runbook links should point at (docs/alerting.md, "Runbook
# links"). Derived from `git remote get-url origin` and `git rev-parse HEAD`, never assumed: for a
# host whose file URLs it does not know, or without an origin, it says so on stderr, prints
# nothing and exits 1; give the address yourself then. The commit pins the anchors to the runbooks
# these rules were written with; push it before the links are used.
#
# Usage: deploy/prometheus/runbook-url.sh
#   url=$(deploy/prometheus/runbook-url.sh) && sed "s|\"docs/runbooks.md|\"$url|" deploy/prometheus/lagsight-rules.yaml
set -eu
cd "$(dirname "$0")/../.."

if ! remote=$(git remote get-url origin 2>/dev/null); then
  echo "runbook-url: this checkout has no git remote \"origin\": give the runbooks' address yourself" >&2
  exit 1
fi
commit=$(git rev-parse HEAD)

# git@host:owner/repo.git, ssh://git@host[:port]/owner/repo.git, https://[user@]host/owner/repo.git
case "$remote" in
  *://*) rest=${remote#*://}; rest=${rest#*@}; host=${rest%%/*}; path=${rest#*/}; host=${host%%:*} ;;
  *:*) rest=${remote#*@}; host=${rest%%:*}; path=${rest#*:} ;;
  *) echo "runbook-url: origin \"$remote\" is not a URL a browser can open: give the runbooks' address yourself" >&2
     exit 1 ;;
esac
path=${path%/}
path=${path%.git}

case "$host" in
  github.com) echo "https://$host/$path/blob/$commit/docs/runbooks.md" ;;
  gitlab.com | gitlab.*) echo "https://$host/$path/-/blob/$commit/docs/runbooks.md" ;;
  *) echo "runbook-url: cannot tell how $host serves files (GitHub and GitLab are known): give the runbooks' address yourself" >&2
     exit 1 ;;
esac
