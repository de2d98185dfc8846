// A webhook receiver in its own process for bench:webhooks and bench:mqtt (so its work is not
// the appliance's): answers 200 at once, counts requests, and keeps each event's arrival time
// (performance.timeOrigin + now: comparable across processes on this machine). Talks over IPC:
// sends {port} once listening; answers 'report' with {count, arrivals: [[event id, ms]]}.
import { createServer } from 'node:http';

let count = 0;
const arrivals = [];
const server = createServer((req, res) => {
  const chunks = [];
  req.on('data', (c) => chunks.push(c));
  req.on('end', () => {
    const at = performance.timeOrigin + performance.now();
    count++;
    try {
      arrivals.push([JSON.parse(Buffer.concat(chunks).toString('utf8')).id, at]);
    } catch {}
    res.writeHead(200);
    res.end();
  });
});
server.keepAliveTimeout = 30_000;
server.listen(0, '127.0.0.1', () => process.send({ port: server.address().port }));
process.on('message', (m) => {
  if (m === 'report') process.send({ count, arrivals: arrivals.splice(0) });
  if (m === 'reset') {
    count = 0;
    arrivals.length = 0;
  }
  if (m === 'stop') server.close(() => process.exit(0));
});
