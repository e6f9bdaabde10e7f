# syntax=docker/dockerfile:1
# The serverlessapp-operator image: compiled JavaScript and production
# dependencies on distroless Node.js 24, running as a non-root user.
#   docker build -t <registry>/serverlessapp-operator:0.1.0 .
#
# Base images: pin them by digest for a reproducible, tamper-evident build, e.g.
#   docker buildx imagetools inspect node:24-bookworm-slim      (the "Digest:" line)
#   docker build --build-arg BUILD_IMAGE=node:24-bookworm-slim@sha256:<digest> \
#                --build-arg RUNTIME_IMAGE=gcr.io/distroless/nodejs24-debian12:nonroot@sha256:<digest> ...
# No digest is written here: none could be looked up where this file was last
# changed (no container registry reachable), and a made-up one would only break
# the build. Replace the defaults with tag@sha256 pins in your release pipeline.
ARG BUILD_IMAGE=node:24-bookworm-slim
ARG RUNTIME_IMAGE=gcr.io/distroless/nodejs24-debian12:nonroot

FROM ${BUILD_IMAGE} AS build
WORKDIR /src
# Dependencies first, so a source change reuses this layer. No package runs an
# install script: only dev-only packages have one ("node", which downloads a
# Node.js binary the base image already has; esbuild, which bundles the kubectl
# plugin, not in the image), and nothing in the production dependencies needs
# one (package-lock.json: hasInstallScript).
COPY package.json package-lock.json ./
RUN npm ci --ignore-scripts --no-audit --no-fund
COPY tsconfig.json tsconfig.build.json ./
COPY src/ src/
# tsc directly (not `npm run build`, whose dependency check would reinstall with scripts; the
# image runs the operator only, not the kubectl plugin that `npm run build` also bundles).
RUN node node_modules/typescript/bin/tsc -p tsconfig.build.json \
 && npm prune --omit=dev --ignore-scripts --no-audit --no-fund \
 && test ! -e node_modules/node \
 && test -f dist/main.js

FROM ${RUNTIME_IMAGE}
ARG VERSION=0.1.0
LABEL org.opencontainers.image.title="serverlessapp-operator" \
      org.opencontainers.image.description="Turns a ServerlessApp into a Knative Service or KServe InferenceService plus an Istio VirtualService, with canary rollouts, scale windows and model prewarming." \
      org.opencontainers.image.version="${VERSION}" \
      org.opencontainers.image.licenses="Apache-2.0"
WORKDIR /app
# package.json makes dist/ ES modules ("type": "module") and carries the version.
COPY --from=build /src/package.json ./
COPY --from=build /src/node_modules/ node_modules/
COPY --from=build /src/dist/ dist/
USER 65532:65532
EXPOSE 8080 8081
# How node runs the operator, written here only: the benchmarks and fault
# tests read these flags from this file (test/support/image-launch.ts).
# 2 MiB semi-spaces keep V8's young generation small. Measured with 3,000 apps
# created at once under a 1 GiB memory limit: peak RSS 127-134 MiB instead of
# 150-152, 83 MiB instead of 86 idle, 4-14% more CPU per app.
# --no-node-snapshot bootstraps Node's own JavaScript by running it instead of
# deserializing the startup snapshot, which brings in all of it for the main
# thread and again for the probe worker: measured with no app against a real
# API server (docs/benchmarks.md), 73.4 MiB RSS instead of 80.8, most of it
# the worker's (a bare worker 6 MiB instead of 9-14); start-up no slower.
# An environment variable, so a pod's env can override it.
ENV NODE_OPTIONS="--max-semi-space-size=2 --no-node-snapshot"
# --lite-mode runs JavaScript in V8's interpreter only (no optimizing
# compilers, no WebAssembly, so no fetch: the operator uses node:http). A
# controller waits on the API server; measured with 1,000 apps created at once
# (docs/benchmarks.md): 67 MiB RSS with no app instead of 81, peak 84-85
# instead of 103-117, 6.7-9.4 ms CPU per app instead of 5.0-5.3. Not allowed
# in NODE_OPTIONS, so it is an argument; override the container's command to
# drop it.
# Exec form: node is PID 1 and receives SIGTERM itself (graceful shutdown).
ENTRYPOINT ["/nodejs/bin/node", "--lite-mode", "dist/main.js"]
