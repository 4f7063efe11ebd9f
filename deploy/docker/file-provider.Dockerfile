# syntax=docker/dockerfile:1
# The example file provider (examples/file-provider). `npm run images` builds it (scripts/images.sh);
# by hand, from the repository root:
#   docker build -f deploy/docker/file-provider.Dockerfile --build-arg VERSION=0.1.0 -t eso-mtls/file-provider:0.1.0 .
# deploy/examples/file-provider runs it with the Secret mounted at /etc/provider/certs.
#
# Node 24, as controller.Dockerfile (which says why); pinned by tag, digests from
# scripts/resolve-image-digests.sh (docs/images.md).

# The same first lines in the three Dockerfiles of deploy/docker (testing/packaging/images.test.ts
# holds them so): a builder with a layer cache (BuildKit, or buildah and podman with --layers)
# installs and compiles the workspace once for all three images.
FROM node:24-trixie-slim AS build
WORKDIR /src
COPY package.json package-lock.json tsconfig.base.json ./
COPY packages/ packages/
RUN npm ci --no-audit --no-fund --ignore-scripts \
 && npm run build --workspaces --if-present
COPY examples/file-provider/src/ examples/file-provider/src/
COPY deploy/docker/file-provider.tsconfig.json deploy/docker/
# The developer tools go before the prune, as in controller.Dockerfile.
RUN npx tsc -p deploy/docker/file-provider.tsconfig.json \
 && rm -rf packages/devtools \
 && npm prune --omit=dev --no-audit --no-fund \
 && rm -rf packages/*/src packages/*/test

# Distroless, non-root (uid 65532, as the example Deployment's runAsUser). The compiled example
# finds @eso-mtls/grpc through /app/node_modules, and is ESM through /app/package.json.
FROM gcr.io/distroless/nodejs24-debian13:nonroot
ARG VERSION
ARG REVISION
ARG CREATED
LABEL org.opencontainers.image.title="eso-mtls-file-provider" \
      org.opencontainers.image.description="Example External Secrets Operator provider serving secrets from a watched file over mTLS (eso-mtls)" \
      org.opencontainers.image.source="https://github.com/eso-mtls/eso-mtls" \
      org.opencontainers.image.url="https://github.com/eso-mtls/eso-mtls/blob/main/docs/images.md" \
      org.opencontainers.image.documentation="https://github.com/eso-mtls/eso-mtls/tree/main/examples/file-provider" \
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
COPY --from=build /src/examples/file-provider/dist/ examples/file-provider/dist/
USER 65532
ENV NODE_ENV=production
ENTRYPOINT ["/nodejs/bin/node", "/app/examples/file-provider/dist/main.js"]
