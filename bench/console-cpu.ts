import { readdirSync, readFileSync } from 'node:fs';
import { cpuOf } from './process-stats.js';

// CPU of Chromium's processes for bench:console: the descendants of this process (Playwright starts
// Chromium as a child) other than `exclude` (the appliance) and its own, the renderer told apart by
// its command line (`--type=renderer`). Read from /proc, so it costs Chromium nothing.

interface ProcInfo {
  pid: number;
  ppid: number;
  renderer: boolean;
}

function processes(): ProcInfo[] {
  const found: ProcInfo[] = [];
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    try {
      const stat = readFileSync(`/proc/${name}/stat`, 'utf8');
      const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
      const renderer = readFileSync(`/proc/${name}/cmdline`, 'utf8').includes('--type=renderer');
      found.push({ pid: Number(name), ppid, renderer });
    } catch {
      // gone meanwhile
    }
  }
  return found;
}

/** CPU seconds so far of Chromium's processes: all of them, and the renderers'. */
export function chromiumCpu(exclude: number): { all: number; renderer: number } {
  const all = processes();
  const children = new Map<number, ProcInfo[]>();
  for (const p of all) children.set(p.ppid, [...(children.get(p.ppid) ?? []), p]);
  const total = { all: 0, renderer: 0 };
  const visit = (pid: number) => {
    for (const child of children.get(pid) ?? []) {
      if (child.pid === exclude) continue;
      try {
        const seconds = cpuOf(child.pid);
        total.all += seconds;
        if (child.renderer) total.renderer += seconds;
      } catch {
        // gone meanwhile
      }
      visit(child.pid);
    }
  };
  visit(process.pid);
  return total;
}
