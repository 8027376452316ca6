#!/bin/sh
# The image's entrypoint: runs `mosaic` with its arguments. A node must advertise an address
# its peers and clients can reach, which a container learns only when it runs: unless
# MOSAIC_LISTEN_ADDRESS is set, it is the container's own address — the first one its host
# name resolves to (`hostname -i`, from the /etc/hosts the container runtime writes).
set -eu
if [ -z "${MOSAIC_LISTEN_ADDRESS:-}" ]; then
  MOSAIC_LISTEN_ADDRESS="$(hostname -i | cut -d ' ' -f 1)"
  export MOSAIC_LISTEN_ADDRESS
fi
exec /usr/local/bin/mosaic "$@"
