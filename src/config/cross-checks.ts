import type { z } from 'zod';
import { BridgePaths } from '../devices/bridge-paths.js';

// The checks across keys of the configuration (schema.ts holds each key's own), run once the
// keys are read: what one key requires of another (docs/config.md).

/** The parsed configuration, as far as these checks read it. */
interface Checked {
  role: 'standalone' | 'edge' | 'cloud';
  dataDir: string;
  databaseUrl: string | null;
  metrics: { access: string; token: string | null };
  bridge: {
    allowedPaths: readonly string[];
    devices: { path?: string | null; framing: Parameters<BridgePaths['problem']>[1] }[];
  };
  cloud: { url: string[] | null };
  sync: { token: string | null };
}

export function crossChecks(config: Checked, ctx: z.RefinementCtx): void {
  if (config.metrics.access === 'token' && !config.metrics.token) {
    ctx.addIssue({
      code: 'custom',
      path: ['metrics', 'token'],
      message: 'required when metrics.access is "token" (the bearer token scrapers send)',
    });
  }
  // The file's devices name what REST devices may (docs/bridge.md: Device paths).
  const paths = new BridgePaths(config.bridge.allowedPaths, config.dataDir);
  for (const [i, device] of config.bridge.devices.entries()) {
    const problem =
      device.path === null || device.path === undefined ? null : paths.problem(device.path, device.framing);
    if (problem) ctx.addIssue({ code: 'custom', path: ['bridge', 'devices', i, 'path'], message: problem });
  }
  if (config.databaseUrl && config.role !== 'cloud')
    ctx.addIssue({
      code: 'custom',
      path: ['databaseUrl'],
      message: `only the cloud role runs on PostgreSQL; this box's role is "${config.role}" (its store is SQLite under dataDir)`,
    });
  // Cloud sync (docs/sync.md, "Config"). An edge needs the cloud's URL and its sync token.
  if (config.role !== 'edge') return;
  if (!config.cloud.url)
    ctx.addIssue({
      code: 'custom',
      path: ['cloud', 'url'],
      message: 'required when role is "edge" (the URL of the cloud instance)',
    });
  if (!config.sync.token)
    ctx.addIssue({
      code: 'custom',
      path: ['sync', 'token'],
      message: 'required when role is "edge" (the token the cloud issued for this edge)',
    });
}
