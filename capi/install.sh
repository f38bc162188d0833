#!/usr/bin/env bash
# Installs copr's C and Fortran library under PREFIX (default /usr/local):
#
#   PREFIX/lib/libcopr_capi.so, PREFIX/lib/libcopr_capi.a
#   PREFIX/lib/libcopr_scalapack.so (ScaLAPACK's own names on copr: link it ahead of
#     ScaLAPACK, or LD_PRELOAD it)
#   PREFIX/lib/libcopr_interpose.so (MPI_Cart_create and MPI_Dist_graph_create_adjacent
#     with reorder = 1 reordered by copr's mapper: LD_PRELOAD it)
#   PREFIX/include/copr.h, PREFIX/include/copr.f90 (the Fortran module's source)
#   PREFIX/lib/pkgconfig/copr-capi.pc
#
#   capi/install.sh [PREFIX]
#
# It builds the libraries first (cargo build --release -p copr-capi -p copr-scalapack
# -p copr-interpose --features copr-capi/mpi,copr-capi/hwloc,copr-scalapack/mpi,
# copr-interpose/mpi,copr-interpose/hwloc; Open MPI, Debian's libscalapack-openmpi-dev,
# libhwloc-dev and libudev-dev must be installed), unless COPR_CAPI_LIBDIR names a
# directory that already holds them. Then, for a C program:
#
#   mpicc prog.c $(pkg-config --cflags --libs copr-capi)
#
# (with PKG_CONFIG_PATH=PREFIX/lib/pkgconfig when PREFIX is not searched by pkg-config,
# and the library directory in the run-time search path, e.g. -Wl,-rpath,PREFIX/lib).
set -euo pipefail
cd "$(dirname "$0")/.."
prefix=$(realpath -m "${1:-/usr/local}")

libdir=${COPR_CAPI_LIBDIR:-}
if [[ -z "$libdir" ]]; then
    so=$(cargo build --release -p copr-capi -p copr-scalapack -p copr-interpose \
        --features copr-capi/mpi,copr-capi/hwloc,copr-scalapack/mpi \
        --features copr-interpose/mpi,copr-interpose/hwloc --message-format=json \
        | grep '"name":"copr_capi"' \
        | grep -o '"[^"]*/libcopr_capi\.so"' \
        | tr -d '"' \
        | tail -n 1)
    libdir=$(dirname "$so")
fi
for f in libcopr_capi.so libcopr_capi.a libcopr_scalapack.so libcopr_interpose.so; do
    [[ -f "$libdir/$f" ]] || { echo "install.sh: $libdir/$f is missing" >&2; exit 1; }
done

version=$(sed -n 's/^version = "\(.*\)"/\1/p' Cargo.toml | head -n 1)
install -d "$prefix/lib/pkgconfig" "$prefix/include"
install -m 755 "$libdir/libcopr_capi.so" "$libdir/libcopr_scalapack.so" \
    "$libdir/libcopr_interpose.so" "$prefix/lib/"
install -m 644 "$libdir/libcopr_capi.a" "$prefix/lib/"
install -m 644 capi/include/copr.h capi/include/copr.f90 "$prefix/include/"
# Libs.private: what a static link (pkg-config --static) needs besides, for the library
# this script builds (rustc's native-static-libs, MPI, and hwloc)
cat > "$prefix/lib/pkgconfig/copr-capi.pc" <<PC
prefix=$prefix
libdir=\${prefix}/lib
includedir=\${prefix}/include

Name: copr-capi
Description: ScaLAPACK-signature redistribution (p?gemr2d, p?tran*) on copr's reshuffle engine
Version: $version
Cflags: -I\${includedir}
Libs: -L\${libdir} -lcopr_capi -lscalapack-openmpi
Libs.private: -lmpi -lhwloc -lgcc_s -lutil -lrt -lpthread -lm -ldl -lc
PC
echo "install.sh: copr-capi $version installed under $prefix"
