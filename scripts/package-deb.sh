#!/bin/sh
# Builds the Debian package of the daemon with dpkg-deb (no debhelper):
#   scripts/package-deb.sh [PEP_BINARY] [OUT_DIR]
# PEP_BINARY defaults to target/release/pep (cargo build --release -p pep-cli).
# The package holds /usr/bin/pep, the systemd unit (Type=notify, the
# watchdog, hardening; its ExecStart pointed at /usr/bin/pep), a default
# /etc/pep/pep.toml (a conffile: an edited one survives upgrades) and
# docs/daemon.md. Prints the path of the .deb.
set -eu
root=$(cd "$(dirname "$0")/.." && pwd)
bin=${1:-$root/target/release/pep}
out=${2:-$root/target/deb}
[ -x "$bin" ] || { echo "package-deb: no executable $bin (cargo build --release -p pep-cli)" >&2; exit 1; }
version=$(sed -n 's/^version = "\(.*\)"/\1/p' "$root/Cargo.toml" | head -n1)
arch=$(dpkg --print-architecture)
stage=$(mktemp -d)
chmod 0755 "$stage"
trap 'rm -rf "$stage"' EXIT
install -D -m 0755 "$bin" "$stage/usr/bin/pep"
install -d "$stage/lib/systemd/system"
sed 's#/usr/local/bin/pep#/usr/bin/pep#g' "$root/contrib/pep-proxy.service" \
    > "$stage/lib/systemd/system/pep-proxy.service"
install -D -m 0644 "$root/crates/pep-daemon/pep.example.toml" "$stage/etc/pep/pep.toml"
install -D -m 0644 "$root/docs/daemon.md" "$stage/usr/share/doc/pepkit/daemon.md"
install -d "$stage/DEBIAN"
echo /etc/pep/pep.toml > "$stage/DEBIAN/conffiles"
size=$(du -sk "$stage" | cut -f1)
cat > "$stage/DEBIAN/control" <<CONTROL
Package: pepkit
Version: $version
Architecture: $arch
Maintainer: pepkit developers <pepkit@localhost>
Installed-Size: $size
Depends: nftables, iproute2
Section: net
Priority: optional
Description: transparent split-TCP Performance Enhancing Proxy
 pep proxy intercepts TCP connections with TPROXY and relays them over a
 tuned server leg (single node) or a QUIC tunnel (two nodes).
CONTROL
mkdir -p "$out"
deb="$out/pepkit_${version}_${arch}.deb"
dpkg-deb --root-owner-group -Zzstd --build "$stage" "$deb" >/dev/null
echo "$deb"
