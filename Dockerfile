# Multi-stage build: a static ratekv binary on a minimal, non-root image.
FROM golang:1.26 AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
RUN CGO_ENABLED=0 go build -trimpath -ldflags="-s -w" -o /out/ratekv . && mkdir /out/data

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
ENTRYPOINT ["/usr/local/bin/ratekv", "--bind", "0.0.0.0", "--dir", "/data"]
