// bench:http — authenticated REST throughput against the real appliance process.
// Runs `node dist/main.js` on a free loopback port, then loads it with autocannon:
//   GET /health              baseline (no auth, no store read)
//   GET /api/v1/me           bearer token: hash check, user read, ability check
//   GET /api/v1/projects     token + a paginated store query
// Prints one figure per line; BENCH_QUICK=1 finishes in well under 30 s.
import autocannon from 'autocannon';
import { startAppliance } from './appliance.mjs';

const quick = process.env.BENCH_QUICK === '1';
const duration = quick ? 4 : 15;
const connections = 16;
const { url, token, stop } = await startAppliance();

async function load(path, headers = {}) {
  const result = await autocannon({ url: url + path, connections, duration, headers });
  if (result.non2xx > 0 || result.errors > 0)
    throw new Error(`${path}: ${result.non2xx} non-2xx, ${result.errors} errors`);
  return { rps: result.requests.average, p99: result.latency.p99 };
}

const health = await load('/health');
const me = await load('/api/v1/me', { authorization: `Bearer ${token}` });
const projects = await load('/api/v1/projects', { authorization: `Bearer ${token}` });

const line = (name, value, unit) => console.log(`${name}: ${value} ${unit}`);
line('http.health_req_per_s', Math.round(health.rps), '/s');
line('http.me_req_per_s', Math.round(me.rps), '/s');
line('http.projects_req_per_s', Math.round(projects.rps), '/s');
line('http.health_p99_ms', health.p99, 'ms');
line('http.me_p99_ms', me.p99, 'ms');
line('http.me_ratio_to_health', (health.rps / me.rps).toFixed(2), 'x');

await stop();
