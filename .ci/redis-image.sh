#!/usr/bin/env bash
# Builds the local Redis image the test harness runs under testcontainers-go:
# FROM scratch, holding only the host's redis-server and the shared libraries
# ldd lists for it. No registry is needed, and the container starts in well
# under a second.
#
#   bash .ci/redis-image.sh [tag]     (default tag: rlock-redis:local)
set -euo pipefail

tag=${1:-rlock-redis:local}
server=$(command -v redis-server)
ctx=$(mktemp -d)
trap 'rm -rf "$ctx"' EXIT

mkdir -p "$ctx/root/usr/bin" "$ctx/root/data" "$ctx/root/tmp"
cp "$server" "$ctx/root/usr/bin/redis-server"
# Every library the binary loads, at the path the loader looks for it.
for lib in $(ldd "$server" | grep -oE '/[^ ]+'); do
  mkdir -p "$ctx/root$(dirname "$lib")"
  cp -L "$lib" "$ctx/root$lib"
done

cat > "$ctx/Dockerfile" <<'DOCKERFILE'
FROM scratch
COPY root/ /
WORKDIR /data
EXPOSE 6379
ENTRYPOINT ["/usr/bin/redis-server"]
CMD ["--bind", "0.0.0.0", "--protected-mode", "no", "--save", "", "--appendonly", "no"]
DOCKERFILE

docker build -q -t "$tag" "$ctx" >/dev/null
echo "built $tag from $server ($("$server" --version | cut -d' ' -f3))"
