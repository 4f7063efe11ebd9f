# syntax=docker/dockerfile:1
# The eso-mtls controller image for the HSM mode (docs/hsm.md): the controller image of
# controller.Dockerfile, plus pkcs11js (the binding of @eso-mtls/pkcs11) compiled for Node 24, plus
# a PKCS#11 module in /opt/hsm/. The default image has neither a compiled binding (it installs with
# --ignore-scripts) nor a module, so `--hsm-module` fails at start there. `npm run images` does not
# build this one; build it from the repository root.
#
# With SoftHSM2 from Debian, the example module (a software token: for trying the mode, not for
# production; it keeps its tokens in files, see docs/hsm.md):
#   docker build -f deploy/docker/controller-hsm.Dockerfile --build-arg VERSION=0.1.0 \
#     -t registry.example.com/eso-mtls/controller-hsm:0.1.0 .
# With your vendor's module: a folder holding the module and, in lib/, the libraries it needs that
# the distroless base lacks (it has glibc, libstdc++ and libgcc_s), replaces the stage hsm-module:
#   docker buildx build -f deploy/docker/controller-hsm.Dockerfile --build-arg VERSION=0.1.0 \
#     --build-context hsm-module=/path/to/vendor-folder --build-arg HSM_MODULE_DIR=/ \
#     -t registry.example.com/eso-mtls/controller-hsm:0.1.0 .
# (podman and buildah build take --build-context too.) Then install the chart with
# hsm.image.repository=registry.example.com/eso-mtls/controller-hsm and hsm.modulePath=/opt/hsm/<module>.
#
# Node 24 and the distroless base as in controller.Dockerfile (testing/packaging/images.test.ts
# holds both files to the same rules). The build stages run Debian 13 (trixie), the distroless
# base's Debian, so what they compile and copy links against the same glibc.

# The example module: SoftHSM2's libsofthsm2.so in /opt/hsm/, and in /opt/hsm/lib/ every library it
# links that the distroless base does not carry (libcrypto of OpenSSL: Node has its own, built in).
FROM node:24-trixie-slim AS hsm-module
RUN apt-get update \
 && apt-get install -y --no-install-recommends softhsm2 \
 && rm -rf /var/lib/apt/lists/* \
 && mkdir -p /opt/hsm/lib \
 && cp "$(dpkg -L libsofthsm2 | grep '/libsofthsm2\.so$' | head -n 1)" /opt/hsm/ \
 && ldd /opt/hsm/libsofthsm2.so | awk '$3 ~ /^\// { print $3 }' \
    | grep -Ev '/(libc|libm|libdl|libpthread|librt|libstdc\+\+|libgcc_s)\.so' \
    | xargs -r cp -L -t /opt/hsm/lib/

# controller.Dockerfile's build, then a C++ toolchain for node-gyp, which compiles pkcs11js (a
# Node-API addon) against this Node's own headers (nodedir), so nothing is downloaded for it.
# The toolchain comes after the shared lines below, so that they stay shared.
# The same first lines in the three Dockerfiles of deploy/docker (testing/packaging/images.test.ts
# holds them so): a builder with a layer cache (BuildKit, or buildah and podman with --layers)
# installs and compiles the workspace once for all three images.
FROM node:24-trixie-slim AS build
WORKDIR /src
COPY package.json package-lock.json tsconfig.base.json ./
COPY packages/ packages/
RUN npm ci --no-audit --no-fund --ignore-scripts \
 && npm run build --workspaces --if-present
RUN apt-get update \
 && apt-get install -y --no-install-recommends python3 make g++ \
 && rm -rf /var/lib/apt/lists/*
ENV npm_config_nodedir=/usr/local
# pkcs11js is an optional dependency of @eso-mtls/pkcs11: its version is the lockfile's. The
# build fails here, not at the controller's start, when the binding does not load. The developer
# tools go before the prune, as in controller.Dockerfile.
RUN npm rebuild pkcs11js --foreground-scripts \
 && rm -rf packages/devtools \
 && npm prune --omit=dev --no-audit --no-fund \
 && rm -rf packages/*/src packages/*/test \
 && cd packages/pkcs11 && node -e "require('pkcs11js')"

# Distroless: no shell, no package manager; uid 65532 matches the Deployment's runAsUser.
FROM gcr.io/distroless/nodejs24-debian13:nonroot
ARG VERSION
ARG REVISION
ARG CREATED
# The folder of the stage (or --build-context) hsm-module that holds the module and lib/.
ARG HSM_MODULE_DIR=/opt/hsm
LABEL org.opencontainers.image.title="eso-mtls-controller-hsm" \
      org.opencontainers.image.description="The eso-mtls controller with PKCS#11 support: the CA keys in an HSM" \
      org.opencontainers.image.source="https://github.com/eso-mtls/eso-mtls" \
      org.opencontainers.image.url="https://github.com/eso-mtls/eso-mtls/blob/main/docs/hsm.md" \
      org.opencontainers.image.documentation="https://github.com/eso-mtls/eso-mtls/blob/main/docs/hsm.md" \
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
COPY --from=hsm-module ${HSM_MODULE_DIR}/ /opt/hsm/
USER 65532
# The module's own libraries; Node itself needs none of them (its OpenSSL is built in).
ENV NODE_ENV=production \
    LD_LIBRARY_PATH=/opt/hsm/lib
ENTRYPOINT ["/nodejs/bin/node", "/app/packages/controller/bin/eso-mtls.js"]
