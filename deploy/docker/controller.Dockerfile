# syntax=docker/dockerfile:1
# The eso-mtls controller image. Build from the repository root:
#   docker build -f deploy/docker/controller.Dockerfile -t eso-mtls/controller:0.1.0 .
# The Deployment (deploy/base/deployment.yaml) passes `controller --flags...` as args.

FROM node:20-bookworm-slim AS build
WORKDIR /src
COPY package.json package-lock.json tsconfig.base.json ./
COPY packages/ packages/
RUN npm ci --no-audit --no-fund \
 && npm run build --workspaces --if-present \
 && npm prune --omit=dev --no-audit --no-fund \
 && rm -rf packages/*/src packages/*/test

# Distroless: no shell, no package manager; uid 65532 matches the Deployment's runAsUser.
FROM gcr.io/distroless/nodejs20-debian12:nonroot
WORKDIR /app
COPY --from=build /src/package.json ./
COPY --from=build /src/node_modules/ node_modules/
COPY --from=build /src/packages/ packages/
USER 65532
ENV NODE_ENV=production
ENTRYPOINT ["/nodejs/bin/node", "/app/packages/controller/dist/bin/eso-mtls.js"]
