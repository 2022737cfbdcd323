#!/usr/bin/env bash
# Builds go-tpc (github.com/pingcap/go-tpc, module v1.0.12) into .tools/bin/go-tpc for the
# benchmark kit's TPC-C runs. Idempotent: does nothing when that version is already built.
#
# `go install ...@latest` is refused by the module proxy for this module, so we make a
# throw-away module, `go get` the pinned version and `go build -mod=mod` its command.
set -euo pipefail
cd "$(dirname "$0")/.."

VERSION=v1.0.12
DEST=.tools/bin/go-tpc
STAMP=.tools/bin/go-tpc.version

if [[ -x $DEST && -f $STAMP && $(cat "$STAMP") == "$VERSION" ]]; then
    echo "go-tpc $VERSION: ok ($DEST)"
    exit 0
fi
if ! command -v go >/dev/null 2>&1; then
    echo "error: Go is needed to build go-tpc; install Go 1.21 or newer (https://go.dev/dl/) and re-run" >&2
    exit 1
fi
BUILD=$(mktemp -d /tmp/go-tpc-build.XXXXXX)
trap 'rm -rf "$BUILD"' EXIT
mkdir -p .tools/bin
(
    cd "$BUILD"
    go mod init tessera-go-tpc-build >/dev/null 2>&1
    go get "github.com/pingcap/go-tpc@$VERSION"
    go build -mod=mod -o go-tpc github.com/pingcap/go-tpc/cmd/go-tpc
)
mv "$BUILD/go-tpc" "$DEST"
echo "$VERSION" >"$STAMP"
echo "go-tpc $VERSION: built ($DEST)"
