# syntax=docker/dockerfile:1
# Multi-stage build of a static tarn binary on a distroless, non-root base.
# The build step is scripts/build, the same script CI runs.
FROM golang:1.26 AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
ARG TARN_VERSION=dev
RUN TARN_VERSION=${TARN_VERSION} scripts/build /out/tarn

FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /out/tarn /usr/local/bin/tarn
USER nonroot:nonroot
VOLUME /var/lib/tarn
EXPOSE 8181
ENTRYPOINT ["/usr/local/bin/tarn"]
CMD ["serve", "--listen", "0.0.0.0:8181", "--insecure-no-auth", "--data-dir", "/var/lib/tarn"]
