# syntax=docker/dockerfile:1
# The eso-mtls controller image. `npm run images` builds it (scripts/images.sh); by hand, from the
# repository root:
#   docker build -f deploy/docker/controller.Dockerfile --build-arg VERSION=0.1.0 -t eso-mtls/controller:0.1.0 .
# The Deployment (deploy/base/deployment.yaml, the Helm chart) passes `controller --flags...` as args.
#
# Node 24 (LTS until April 2028): the "main" line of scripts/node-releases.json, the one `npm test`
# runs, and a line the Node matrix runs (testing/packaging/images.test.ts keeps the three in step).
# Base images are pinned by tag; scripts/resolve-image-digests.sh adds their digests where a
# registry is reachable (docs/images.md).

# The same first lines in the three Dockerfiles of deploy/docker (testing/packaging/images.test.ts
# holds them so): a builder with a layer cache (BuildKit, or buildah and podman with --layers)
# installs and compiles the workspace once for all three images.
FROM node:24-trixie-slim AS build
WORKDIR /src
COPY package.json package-lock.json tsconfig.base.json ./
COPY packages/ packages/
RUN npm ci --no-audit --no-fund --ignore-scripts \
 && npm run build --workspaces --if-present
# The developer tools (@eso-mtls/devtools: the demo, the chart renderer, the cluster launcher) never
# ship: their folder goes before the prune, which then drops what only they use (vega, vega-lite).
RUN rm -rf packages/devtools \
 && npm prune --omit=dev --no-audit --no-fund \
 && rm -rf packages/*/src packages/*/test

# Distroless: no shell, no package manager; uid 65532 matches the Deployment's runAsUser.
FROM gcr.io/distroless/nodejs24-debian13:nonroot
ARG VERSION
ARG REVISION
ARG CREATED
LABEL org.opencontainers.image.title="eso-mtls-controller" \
      org.opencontainers.image.description="Issues and rotates the mTLS certificates of External Secrets Operator out-of-process providers" \
      org.opencontainers.image.source="https://github.com/eso-mtls/eso-mtls" \
      org.opencontainers.image.url="https://github.com/eso-mtls/eso-mtls/blob/main/docs/images.md" \
      org.opencontainers.image.documentation="https://github.com/eso-mtls/eso-mtls/blob/main/docs/controller.md" \
      org.opencontainers.image.licenses="Apache-2.0" \
      org.opencontainers.image.vendor="eso-mtls" \
      org.opencontainers.image.version="${VERSION}" \
      org.opencontainers.image.revision="${REVISION}" \
      org.opencontainers.image.created="${CREATED}" \
      org.opencontainers.image.base.name="gcr.io/distroless/nodejs24-debian13:nonroot"
WORKDIR /app
COPY --from=build /src/package.json ./
COPY --from=build /src/node_modules/ node_modules/
COPY --from=build /src/packages/ packages/
USER 65532
ENV NODE_ENV=production
ENTRYPOINT ["/nodejs/bin/node", "/app/packages/controller/bin/eso-mtls.js"]
