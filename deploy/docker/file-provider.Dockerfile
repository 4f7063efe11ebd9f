# syntax=docker/dockerfile:1
# The example file provider (examples/file-provider). Build from the repository root:
#   docker build -f deploy/docker/file-provider.Dockerfile -t eso-mtls/file-provider:0.1.0 .
# deploy/examples/file-provider runs it with the Secret mounted at /etc/provider/certs.

FROM node:20-bookworm-slim AS build
WORKDIR /src
COPY package.json package-lock.json tsconfig.base.json ./
COPY packages/ packages/
COPY examples/file-provider/src/ examples/file-provider/src/
COPY deploy/docker/file-provider.tsconfig.json deploy/docker/
RUN npm ci --no-audit --no-fund \
 && npm run build --workspaces --if-present \
 && npx tsc -p deploy/docker/file-provider.tsconfig.json \
 && npm prune --omit=dev --no-audit --no-fund \
 && rm -rf packages/*/src packages/*/test

# Distroless, non-root (uid 65532, as the example Deployment's runAsUser). The compiled example
# finds @eso-mtls/grpc through /app/node_modules, and is ESM through /app/package.json.
FROM gcr.io/distroless/nodejs20-debian12:nonroot
WORKDIR /app
COPY --from=build /src/package.json ./
COPY --from=build /src/node_modules/ node_modules/
COPY --from=build /src/packages/ packages/
COPY --from=build /src/examples/file-provider/dist/ examples/file-provider/dist/
USER 65532
ENV NODE_ENV=production
ENTRYPOINT ["/nodejs/bin/node", "/app/examples/file-provider/dist/main.js"]
