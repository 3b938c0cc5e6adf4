#!/bin/sh
# Print .env.example with its empty secrets filled in with fresh random values:
#   sh deploy/make-env.sh > .env
# Other settings keep the example's values; edit .env afterwards to change them.
set -eu
here=$(dirname "$0")
random_hex() {
  od -An -tx1 -N"$1" /dev/urandom | tr -d ' \n'
}
while IFS= read -r line || [ -n "$line" ]; do
  case "$line" in
    POSTGRES_PASSWORD=|REDIS_PASSWORD=|MICROGRADE_SECRET_KEY=)
      printf '%s%s\n' "$line" "$(random_hex 24)" ;;
    MICROGRADE_JOIN_CODE=)
      printf '%s%s\n' "$line" "$(random_hex 4)" ;;
    *)
      printf '%s\n' "$line" ;;
  esac
done < "$here/../.env.example"
