# syntax=docker/dockerfile:1
# The serverlessapp-operator image: compiled JavaScript and production
# dependencies on distroless Node.js 24, running as a non-root user.
#   docker build -t <registry>/serverlessapp-operator:0.1.0 .

FROM node:24-bookworm-slim AS build
WORKDIR /src
# Dependencies first, so a source change reuses this layer.
COPY package.json package-lock.json ./
COPY scripts/ensure-deps.sh scripts/
RUN npm ci --no-audit --no-fund
COPY tsconfig.json tsconfig.build.json ./
COPY src/ src/
RUN npm run build \
 && npm prune --omit=dev --no-audit --no-fund \
 && test ! -e node_modules/node \
 && test -f dist/main.js

FROM gcr.io/distroless/nodejs24-debian12:nonroot
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
# Exec form: node is PID 1 and receives SIGTERM itself (graceful shutdown).
ENTRYPOINT ["/nodejs/bin/node", "dist/main.js"]
