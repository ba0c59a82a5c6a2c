# syntax=docker/dockerfile:1
# spin-server container image (docs/OPERATIONS.md, Running in a container).
#
#   docker build -t spin-server .
#   docker run --rm -p 8080:8080 -v spin-data:/app/data spin-server
#   # own config:  -v "$PWD/my.json:/app/Config/spin-server.json:ro"
#   # tokens:      -e SPIN_TOKENS="tok:read+write,admin-tok:admin"
#
# Build stage: the official Swift image on Debian 12 (bookworm), the same distribution as
# the runtime stage, so the libssl3/zlib1g the binary links against are ABI-identical.
# SWIFT_VERSION=6.3 follows the toolchain the project builds with (6.3.1 at the time of
# writing); pin a patch tag (e.g. --build-arg SWIFT_VERSION=6.3.1) for reproducible builds.
ARG SWIFT_VERSION=6.3
FROM swift:${SWIFT_VERSION}-bookworm AS build

# Headers of the system libraries behind the CZlib, COpenSSL, CPostgres and CSQLite shim targets. Versions are
# not pinned (DL3008): bookworm's archive keeps only the current security release of each.
# hadolint ignore=DL3008
RUN apt-get update \
    && apt-get install -y --no-install-recommends libssl-dev zlib1g-dev libpq-dev libsqlite3-dev \
    && rm -rf /var/lib/apt/lists/*

WORKDIR /src
COPY . .
# --static-swift-stdlib links the Swift runtime and Foundation statically: the runtime
# image needs no Swift toolchain. The same command runs outside a container in CI
# (Tests/docker/run-dockerfile-steps.sh). Beside the binary, SwiftPM builds
# spin-server_SpinServer.resources: the dashboard it serves.
RUN swift build -c release --static-swift-stdlib --product spin-server \
    && install -D -m 0755 "$(swift build -c release --show-bin-path)/spin-server" /out/spin-server \
    && cp -R "$(swift build -c release --show-bin-path)/spin-server_SpinServer.resources" /out/ \
    && strip /out/spin-server

# Runtime stage: what `ldd` of the static-stdlib binary lists, nothing more:
#   libssl.so.3, libcrypto.so.3 -> libssl3; libz.so.1 -> zlib1g; libpq.so.5 -> libpq5
#   (the PostgreSQL client; it brings its own dependencies: GSSAPI, LDAP);
#   libsqlite3.so.0 -> libsqlite3-0 (the database of the Spins made at run time);
#   libstdc++.so.6 -> libstdc++6; libgcc_s.so.1 -> libgcc-s1; libc, libm -> libc6 (base).
# No libcurl: the server does not import FoundationNetworking. ICU is linked statically.
# ca-certificates for outbound TLS verification by anything the operator adds.
FROM debian:bookworm-slim AS runtime

# hadolint ignore=DL3008
RUN apt-get update \
    && apt-get install -y --no-install-recommends libssl3 zlib1g libpq5 libsqlite3-0 libstdc++6 libgcc-s1 ca-certificates \
    && rm -rf /var/lib/apt/lists/* \
    && groupadd --system --gid 10001 spin \
    && useradd --system --uid 10001 --gid spin --home-dir /app --no-create-home --shell /usr/sbin/nologin spin \
    && mkdir -p /app/Config /app/data \
    && chown spin:spin /app/data

WORKDIR /app
COPY --from=build /out/spin-server /usr/local/bin/spin-server
# The resource bundle goes beside the binary: that is where Bundle.module looks for it
# (a missing bundle stops start-up, naming the path).
COPY --from=build /out/spin-server_SpinServer.resources /usr/local/bin/spin-server_SpinServer.resources
# The default configuration; override by mounting a file over
# /app/Config/spin-server.json, or point SPIN_CONFIG elsewhere.
COPY Config/ /app/Config/

# Every SPIN_* variable the server reads (precedence: flags > SPIN_* > config file > defaults):
#   SPIN_CONFIG           path of the JSON config file (default Config/spin-server.json, i.e. /app/Config/spin-server.json)
#   SPIN_HOST             listen address; 0.0.0.0 here so the published port is reachable
#   SPIN_PORT             listen port (0 picks a free one and logs it); the HEALTHCHECK probes it
#   SPIN_STORAGE          directory of the journals and snapshots: the /app/data volume
#   SPIN_STORAGE_BACKEND  file (default: SPIN_STORAGE) or postgres (a PostgreSQL database)
#   SPIN_DATABASE_URL     the postgres backend's libpq connection string,
#                         postgresql://user:password@host:5432/db; pass at run time, like tokens
#   SPIN_LOG_LEVEL        trace|debug|info|notice|warning|error|critical (unset: config/default)
#   SPIN_LOG_FORMAT       text or json (one JSON object per line, for a log collector)
#   SPIN_TLS_CERTIFICATE  PEM certificate file (mount it read-only); with SPIN_TLS_KEY enables TLS
#   SPIN_TLS_KEY          PEM private key file
#   SPIN_TOKENS           bearer tokens and scopes, "tok:read+write,other:admin"; pass at run
#                         time (-e / secrets), never bake tokens into the image
#   SPIN_ALLOWED_HOSTS    without tokens, the Host names served besides localhost and loopback
#                         addresses, "spin.example.com,10.0.0.5" (others get 421): list the
#                         names clients reach the container by, or set tokens
#   SPIN_JWT_SECRET       an HS256 key for bearer JWTs (pass at run time, like tokens)
#   SPIN_JWT_JWKS_FILE    a JWKS file of public keys for bearer JWTs (mount it read-only)
#   SPIN_NODE             this node's name in a cluster (postgres backend; default the host name)
#   SPIN_CLUSTER_ADVERTISE  the URL other nodes reach this one at (http://<name>:8080)
#   SPIN_CLUSTER_LEASE_SECONDS  how long a partition's lease and a node's heartbeat last (default 10)
#   SPIN_CLUSTER_PARTITIONS  how many partitions the Spins are cut into, the same on every node (default 64)
#   SPIN_ECHO_ENDPOINT    true mounts a WebSocket echo at /v1/echo (conformance tests only)
ENV SPIN_HOST=0.0.0.0 \
    SPIN_PORT=8080 \
    SPIN_STORAGE=/app/data

VOLUME ["/app/data"]
EXPOSE 8080
# Numeric ids (the "spin" user created above) so orchestrators can verify non-root.
USER 10001:10001

# Health probe with bash's /dev/tcp (bash, timeout, head and grep are in every Debian base
# image): no curl, so no extra package and its CVEs in the runtime image. It speaks plain
# HTTP to loopback; with TLS enabled, replace it (e.g. install curl and use https -k).
HEALTHCHECK --interval=15s --timeout=5s --start-period=10s --retries=3 \
    CMD ["timeout", "4", "bash", "-c", "exec 3<>/dev/tcp/127.0.0.1/${SPIN_PORT:-8080} && printf 'GET /healthz HTTP/1.1\\r\\nHost: localhost\\r\\nConnection: close\\r\\n\\r\\n' >&3 && head -n 1 <&3 | grep -q ' 200 '"]

# Exec form: the server is PID 1 and receives SIGTERM itself, stops accepting, drains and
# exits 0 well inside Docker's 10 s stop timeout.
STOPSIGNAL SIGTERM
ENTRYPOINT ["/usr/local/bin/spin-server"]
CMD []
