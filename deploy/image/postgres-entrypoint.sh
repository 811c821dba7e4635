#!/bin/sh
# The entrypoint of the PostgreSQL image (deploy/image/build-services.sh, docs/deployment.md#compose): what the
# official image's does with the variables compose.yaml sets. On an empty $PGDATA: initdb with POSTGRES_USER (default
# postgres) as the superuser and POSTGRES_PASSWORD as its password, POSTGRES_DB (default the user's name) created,
# every address listened on, and a password (scram-sha-256) asked of every TCP client; POSTGRES_HOST_AUTH_METHOD=trust
# instead asks none (local tests only). Then PostgreSQL in the foreground as postgres (10002). Only dash's builtins and
# PostgreSQL's own tools: the image has nothing else.
set -eu
case "${1:-}" in
  '' | -*) set -- postgres "$@" ;;
esac
if [ "$1" != postgres ]; then exec "$@"; fi
user=${POSTGRES_USER:-postgres}
database=${POSTGRES_DB:-$user}
method=${POSTGRES_HOST_AUTH_METHOD:-scram-sha-256}

if [ ! -s "$PGDATA/PG_VERSION" ]; then
  if [ -z "${POSTGRES_PASSWORD:-}" ] && [ "$method" != trust ]; then
    echo 'postgres-entrypoint: POSTGRES_PASSWORD is empty: set it (or POSTGRES_HOST_AUTH_METHOD=trust, local tests only)' >&2
    exit 1
  fi
  echo "postgres-entrypoint: initdb in $PGDATA, superuser $user, database $database"
  if [ -n "${POSTGRES_PASSWORD:-}" ]; then
    # The password goes through a pipe: never an argument, a file or the environment of a child beyond initdb.
    printf '%s\n' "$POSTGRES_PASSWORD" | initdb --pgdata="$PGDATA" --username="$user" --pwfile=/dev/stdin \
      --auth-local=trust --auth-host="$method" --encoding=UTF8 --locale=C.UTF-8 >/dev/null
  else
    initdb --pgdata="$PGDATA" --username="$user" --auth-local=trust --auth-host="$method" --encoding=UTF8 \
      --locale=C.UTF-8 >/dev/null
  fi
  printf "\nlisten_addresses = '*'\n" >>"$PGDATA/postgresql.conf"
  printf 'host all all all %s\n' "$method" >>"$PGDATA/pg_hba.conf"
  if [ "$database" != postgres ]; then
    # A server on the Unix socket only, for psql, which quotes the name (:"name").
    pg_ctl --pgdata="$PGDATA" --options="-c listen_addresses=''" --wait --silent start
    printf 'CREATE DATABASE :"name";\n' |
      psql --quiet --no-psqlrc --set=ON_ERROR_STOP=1 --set=name="$database" --username="$user" --dbname=postgres
    pg_ctl --pgdata="$PGDATA" --mode=fast --wait --silent stop
  fi
fi
exec "$@"
