# tidingsd and the tidings CLI on Debian bookworm; compose.yaml runs three of
# them as a cluster (docs/deploy.md).

# --- build: the packages a developer machine has, from the same script -----
FROM debian:bookworm AS build
WORKDIR /src
# The script alone first, so its (large) package layer survives source edits.
# It runs apt-get directly as root, without sudo.
COPY scripts/bootstrap scripts/bootstrap
RUN scripts/bootstrap && rm -rf /var/lib/apt/lists/*
COPY . .
# The image needs no tests. Two jobs by default, as scripts/test: C++ with
# CAF and Boost needs about 1 GiB per compiler. Debug info is stripped
# (symbols stay, for backtraces): it is most of the binaries' size.
ARG JOBS=2
RUN --mount=type=cache,target=/root/.cache/ccache \
    cmake -S . -B build/release -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DTIDINGS_TESTS=OFF \
 && cmake --build build/release -j"${JOBS}" --target tidingsd tidings \
 && install -D -t /out build/release/apps/tidingsd/tidingsd build/release/apps/tidings_cli/tidings \
 && strip --strip-debug /out/tidingsd /out/tidings

# --- etcd: Debian's etcd for the cluster's record (compose.yaml) ------------
FROM debian:bookworm-slim AS etcd
RUN apt-get update -qq \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends etcd-server etcd-client \
 && rm -rf /var/lib/apt/lists/*
# Client and peer ports, on the compose network only.
EXPOSE 2379 2380
ENTRYPOINT ["etcd"]

# --- runtime: the shared libraries the two binaries link, nothing else -----
FROM debian:bookworm-slim
# The runtime halves of bootstrap's -dev packages (ldd of both binaries;
# caf-io carries the middleman the cluster talks through, caf-openssl its
# mutual TLS, libnats the nats_topic sources), and curl for the healthcheck.
RUN apt-get update -qq \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
      libcaf-core0.17 libcaf-io0.17 libcaf-openssl0.17 libjwt0 liblua5.4-0 libnats3.4 libpq5 \
      libprometheus-cpp-core1.0 libprotobuf32 librocksdb7.8 libssl3 libyaml-cpp0.7 curl \
 && rm -rf /var/lib/apt/lists/*
COPY --from=build /out/ /usr/local/bin/
# A library missing from the list above fails the build here, not at start.
RUN ! ldd /usr/local/bin/tidingsd /usr/local/bin/tidings | grep 'not found'
# Not root; the data directory is a volume the user owns (a new named volume
# takes the owner from the image).
RUN useradd --system --uid 10001 --user-group --home-dir /var/lib/tidings --shell /usr/sbin/nologin tidings \
 && install -d -o tidings -g tidings -m 0750 /var/lib/tidings
USER tidings
WORKDIR /var/lib/tidings
VOLUME /var/lib/tidings
# HTTP, and the cluster port (only between nodes).
EXPOSE 8080 7100
ENTRYPOINT ["tidingsd"]
CMD ["--config", "/etc/tidings/tidings.yaml"]
