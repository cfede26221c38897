# Multi-stage build: a static ratekv binary on a minimal, non-root image.
#
#   docker build --build-arg VCS_REF="$(git rev-parse HEAD)" -t ratekv .
#   docker run -d -p 6380:6380 -v ratekv-data:/data ratekv
#   docker run -d -p 6380:6380 -v ratekv-data:/data \
#     -v "$PWD/ratekv.conf:/etc/ratekv/ratekv.conf:ro" ratekv /etc/ratekv/ratekv.conf
FROM golang:1.26 AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
# .dockerignore keeps .git out of the context, so Go cannot stamp the
# commit into the binary: --version shows VCS_REF instead.
ARG VCS_REF=""
RUN CGO_ENABLED=0 go build -trimpath -ldflags="-s -w -X main.commit=${VCS_REF}" -o /out/ratekv . && mkdir /out/data

FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /out/ratekv /usr/local/bin/ratekv
# Snapshots and the append-only log live here; mount a volume to keep them.
# The directory belongs to nonroot (65532) so that a new volume mounted on it
# does too: a VOLUME alone is created owned by root, which ratekv, running as
# nonroot, cannot write to.
COPY --from=build --chown=65532:65532 /out/data /data
VOLUME ["/data"]
EXPOSE 6380
USER nonroot:nonroot
# docker run's arguments follow the ENTRYPOINT: a config file and options,
# as with the official redis image (docker run ratekv /etc/ratekv/ratekv.conf
# --loglevel warning). ratekv applies its arguments in order, so --bind and
# --dir here are defaults that the file may change, and options after the
# file win over it. On 0.0.0.0, protected mode (the default) refuses
# clients from other hosts and containers until requirepass is set: pass it
# from a mounted secret file with --include (README, Docker), never here.
ENTRYPOINT ["/usr/local/bin/ratekv", "--bind", "0.0.0.0", "--dir", "/data"]
CMD []
# The image has no shell and no redis-cli: ratekv pings itself, at the
# address the server announced in /data (whatever port the config gave it).
HEALTHCHECK --interval=10s --timeout=5s --start-period=60s --retries=3 \
  CMD ["/usr/local/bin/ratekv", "--dir", "/data", "--ping"]
