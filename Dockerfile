# The Stator agent with Debian's PostgreSQL 15, as used by docker-compose.yml, on Node 24 (an LTS line CI tests).

FROM node:24-bookworm-slim AS build
WORKDIR /opt/stator
COPY package.json package-lock.json ./
RUN npm ci --no-audit --no-fund
COPY tsconfig.json tsconfig.build.json ./
COPY bin ./bin
COPY scripts ./scripts
COPY src ./src
RUN npm run build && npm prune --omit=dev --no-audit --no-fund

FROM node:24-bookworm-slim
# python3 runs the fence (src/postgresql/fence/fence_main.py), the postmaster's parent and dead man's switch.
# postgresql-common would create a "main" cluster on install; Stator runs initdb itself, in its own data_dir.
RUN mkdir -p /etc/postgresql-common/createcluster.d \
 && echo 'create_main_cluster = false' > /etc/postgresql-common/createcluster.d/stator.conf \
 && apt-get update \
 && apt-get install -y --no-install-recommends postgresql-15 python3 \
 && rm -rf /var/lib/apt/lists/*
# initdb takes its encoding from the locale; without one it would pick SQL_ASCII.
ENV LANG=C.UTF-8 NODE_ENV=production MALLOC_ARENA_MAX=2
WORKDIR /opt/stator
COPY --from=build /opt/stator/package.json ./
COPY --from=build /opt/stator/node_modules ./node_modules
COPY --from=build /opt/stator/bin ./bin
COPY --from=build /opt/stator/dist ./dist
# The live view at /ui: its page and the rendered statecharts.
COPY --from=build /opt/stator/src/ui ./src/ui
COPY statecharts/*.svg ./statecharts/
# The volume mount point: a fresh named volume takes this ownership, so postgres can write to it.
RUN install -d -o postgres -g postgres -m 0700 /var/lib/postgresql/stator
USER postgres
EXPOSE 8008 5432
# No argument: the configuration comes from the PATRONI_* / STATOR_* environment (docs/configuration.md).
# Mount a file and append its path (`command: [/etc/stator/stator.yml]`) to use one instead.
# Node flags (none today) and MALLOC_ARENA_MAX (ENV above): see src/cli/agent-node-flags.ts.
ENTRYPOINT ["node", "/opt/stator/bin/stator.js"]
