import { spawn } from 'node:child_process';
import { fixtureBundle } from './fixture-bundle.js';

// Runs test/fixtures/venue-writer.ts as a separate process: another tool writing the store the
// appliance runs on (bundled: fixture-bundle.ts).

export type WriterStep = [service: string, method: string, ...args: unknown[]];

/** Runs the steps in one process against the project's venue; answers their results (rows, or null). */
export async function writeVenue(dataDir: string, steps: WriterStep[], project = 'default/default'): Promise<any[]> {
  const bundle = await fixtureBundle('venue-writer');
  const { code, stdout, stderr } = await new Promise<{ code: number | null; stdout: string; stderr: string }>(
    (resolve) => {
      const proc = spawn(process.execPath, [bundle, dataDir, project, JSON.stringify(steps)], {
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
