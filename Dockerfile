# Outpost's image. Untested here (no Docker daemon where it was written); see docs/deploy.md.
#
# Outpost runs its TypeScript directly (Node's type stripping) and gen/ is committed, so there is
# no build step: the first stage only installs the production dependencies, and the runtime stage
# copies them beside the source.

FROM node:24-slim AS dependencies
WORKDIR /app
COPY package.json package-lock.json ./
# Optional dependencies stay: the platform packages of @node-rs/argon2 are optional ones. The
# optional Node.js binary (node-linux-*) is for hosts whose Node is older than 22.18; this image's
# Node is 24, so bin/node-guard.js never uses it, and it is removed to keep the image small.
RUN npm ci --omit=dev --no-audit --no-fund \
 && rm -rf node_modules/node-linux-* node_modules/node-darwin-* node_modules/.bin/node \
 && npm cache clean --force

FROM node:24-slim AS runtime
ENV NODE_ENV=production \
    PORT=3000 \
    GAME_PORT=3001 \
    HOST=0.0.0.0 \
    DATA_DIR=/data
WORKDIR /app
COPY --from=dependencies /app/node_modules ./node_modules
COPY package.json ./
COPY bin ./bin
COPY agent ./agent
COPY contract ./contract
COPY core ./core
COPY edge ./edge
COPY gen ./gen
COPY server ./server
# DATA_DIR holds the embedded database and a generated KEK when DATABASE_URL and
# KEY_ENCRYPTION_KEY are not set; a deployment sets both and the volume stays empty.
RUN mkdir -p /data && chown node:node /data
USER node
VOLUME ["/data"]
EXPOSE 3000 3001
# /healthz answers while the process runs; /readyz (what a load balancer should use) also needs
# the database. The slim image has no curl, so Node asks.
HEALTHCHECK --interval=10s --timeout=3s --start-period=20s --retries=3 \
  CMD ["node", "-e", "fetch(`http://127.0.0.1:${process.env.PORT}/healthz`).then((r) => process.exit(r.ok ? 0 : 1), () => process.exit(1))"]
STOPSIGNAL SIGTERM
CMD ["node", "--v8-pool-size=0", "bin/outpost.js", "serve"]
