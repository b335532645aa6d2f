# Sourced by scripts/demo and scripts/test: install the Debian packages the
# build, the tests and the guest image need, only those that are missing.
DEPS_PACKAGES="gcc meson ninja-build pkg-config python3 qemu-system-x86 gnuplot-nox busybox-static cpio libjson-c-dev xz-utils zstd"
# scripts/fuzz (which scripts/test runs): clang and its libFuzzer runtime.
DEPS_FUZZ_PACKAGES="clang libclang-rt-14-dev"

# deps_install [PACKAGE...]: those missing of the list (default $DEPS_PACKAGES).
deps_install() {
	local missing=() want="${*:-$DEPS_PACKAGES}"
	for p in $want; do
		dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'ok installed' || missing+=("$p")
	done
	[ ${#missing[@]} -eq 0 ] && return 0
	if [ "$(id -u)" -ne 0 ]; then
		echo "scripts: need root to install: ${missing[*]}" >&2
		return 1
	fi
	echo "scripts: installing ${missing[*]}"
	DEBIAN_FRONTEND=noninteractive apt-get install -y -q "${missing[@]}" >/tmp/lagvisor-apt.log 2>&1 ||
		{ apt-get update -q >/dev/null 2>&1 &&
		  DEBIAN_FRONTEND=noninteractive apt-get install -y -q "${missing[@]}" >/tmp/lagvisor-apt.log 2>&1; } ||
		{ echo "scripts: apt-get install failed, see /tmp/lagvisor-apt.log" >&2; return 1; }
}
