# syntax=docker/dockerfile:1
# Multi-stage: native modules (better-sqlite3; pg-native against libpq, for a cloud on PostgreSQL)
# are compiled in the build stage; the runtime image carries only the bundle, production
# node_modules and the default config.
FROM node:20-bookworm-slim AS build
WORKDIR /app
RUN apt-get update && apt-get install -y --no-install-recommends python3 make g++ libpq-dev && rm -rf /var/lib/apt/lists/*
COPY package.json package-lock.json ./
RUN npm ci --no-audit --no-fund
COPY tsconfig.json ./
COPY scripts ./scripts
COPY src ./src
COPY firmware-bridge ./firmware-bridge
COPY sync ./sync
# The staff console (docs/console.md): scripts/build.mjs builds it into dist/console.
COPY console ./console
COPY config ./config
RUN npm run build && npm prune --omit=dev

FROM node:20-bookworm-slim
# node-hid (USB HID barcode scanners, docs/bridge.md) loads libudev at run time; without it HID is
# reported off and serial readers still work. A reader also needs the container run with
# --device /dev/hidraw0 (or /dev/ttyUSB0 for serial). libpq5: a cloud on PostgreSQL (GATEHOUSE_DATABASE_URL).
RUN apt-get update && apt-get install -y --no-install-recommends libudev1 libpq5 && rm -rf /var/lib/apt/lists/*
ENV NODE_ENV=production \
    GATEHOUSE_DATA_DIR=/app/data
WORKDIR /app
COPY --from=build --chown=node:node /app/node_modules ./node_modules
COPY --from=build --chown=node:node /app/dist ./dist
COPY --from=build --chown=node:node /app/config ./config
COPY --from=build --chown=node:node /app/package.json ./package.json
RUN mkdir -p /app/data && chown node:node /app/data
USER node
VOLUME ["/app/data"]
# HTTP (REST, webhooks, WebSocket, console), MQTT, optional HTTPS
EXPOSE 8080 1883 8443
HEALTHCHECK --interval=15s --timeout=3s --start-period=20s --retries=3 \
  CMD node -e "fetch('http://127.0.0.1:'+(process.env.GATEHOUSE_HTTP_PORT||8080)+'/health').then(r=>process.exit(r.ok?0:1),()=>process.exit(1))"
CMD ["node", "--max-semi-space-size=64", "--enable-source-maps", "dist/main.js"]
