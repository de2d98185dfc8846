import { spawn } from 'node:child_process';
import { build } from 'esbuild';

// Runs test/fixtures/venue-writer.ts as a separate process: another tool writing the store the
// appliance runs on. Bundled into dist/ (as the benches are) so its npm packages resolve.

const OUTFILE = 'dist/test-venue-writer.mjs';
let built: Promise<unknown> | null = null;

export type WriterStep = [service: string, method: string, ...args: unknown[]];

/** Runs the steps in one process against the project's venue; answers their results (rows, or null). */
export async function writeVenue(dataDir: string, steps: WriterStep[], project = 'default/default'): Promise<any[]> {
  built ??= build({
    entryPoints: ['test/fixtures/venue-writer.ts'],
    outfile: OUTFILE,
    bundle: true,
    platform: 'node',
    format: 'esm',
    target: 'node20',
    packages: 'external',
    logLevel: 'warning',
  });
  await built;
  const { code, stdout, stderr } = await new Promise<{ code: number | null; stdout: string; stderr: string }>(
    (resolve) => {
      const proc = spawn(process.execPath, [OUTFILE, dataDir, project, JSON.stringify(steps)], {
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      let out = '';
      let err = '';
      proc.stdout.on('data', (c: Buffer) => (out += c.toString()));
      proc.stderr.on('data', (c: Buffer) => (err += c.toString()));
      proc.on('exit', (exitCode) => resolve({ code: exitCode, stdout: out, stderr: err }));
    },
  );
  if (code !== 0) throw new Error(`venue writer exited ${code}: ${stderr}`);
  return JSON.parse(stdout) as any[];
}
