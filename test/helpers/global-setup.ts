import { execFileSync } from 'node:child_process';

// Process-level tests run the bundle exactly as `npm start` does; build it once.
export default function setup(): void {
  execFileSync(process.execPath, ['scripts/build.mjs'], { stdio: 'inherit' });
}
