# stmd container image.
#
#   docker build -t stmd .
#   docker run -p 127.0.0.1:6379:6379 -v stmd-data:/data stmd
#
# Inside the container stmd binds 0.0.0.0 (the only way the published port reaches it). That is a
# non-loopback bind: publish the port on the host's loopback (as above) or on a private network,
# and set STMD_REQUIREPASS when anything else can reach it.

# --- build ---------------------------------------------------------------------------------------
FROM rust:1-bookworm AS build
WORKDIR /src
# Everything the build reads: the manifest declares the bench target, and the migrations are
# embedded in the binary at compile time.
COPY Cargo.toml Cargo.lock ./
COPY src ./src
COPY migrations ./migrations
COPY benches ./benches
RUN cargo build --release --locked --bin stmd \
    && cp target/release/stmd /usr/local/bin/stmd

# --- run -----------------------------------------------------------------------------------------
FROM debian:bookworm-slim
# redis-cli only serves the HEALTHCHECK.
RUN apt-get update \
    && apt-get install -y --no-install-recommends redis-tools \
    && rm -rf /var/lib/apt/lists/* \
    && useradd --system --uid 10001 --home-dir /data --shell /usr/sbin/nologin stmd \
    && mkdir -p /data \
    && chown stmd:stmd /data
COPY --from=build /usr/local/bin/stmd /usr/local/bin/stmd

# Defaults through the environment, so `docker run -e` and compose can override any of them.
# The embedded SQLite file (stmd.db) lives in the /data volume unless STMD_DATABASE_URL is set.
ENV STMD_BIND=0.0.0.0 \
    STMD_PORT=6379 \
    STMD_DIR=/data
VOLUME ["/data"]
EXPOSE 6379
USER stmd
WORKDIR /data

# PONG, and nothing else, means healthy (redis-cli exits 0 even on an error reply). REDISCLI_AUTH
# carries the password when one is set.
HEALTHCHECK --interval=10s --timeout=3s --start-period=10s --retries=3 \
    CMD if [ -n "${STMD_REQUIREPASS:-}" ]; then export REDISCLI_AUTH="$STMD_REQUIREPASS"; fi; \
        redis-cli -h 127.0.0.1 -p "${STMD_PORT:-6379}" ping | grep -q PONG

# SIGTERM (docker stop) drains connections and flushes the scope-row queue before exiting.
STOPSIGNAL SIGTERM
ENTRYPOINT ["stmd"]
