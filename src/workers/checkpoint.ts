import { parentPort, workerData } from 'node:worker_threads';
import { type CheckpointWorkerData, WalCheckpoints } from '../store/wal-checkpoints.js';

// The WAL checkpoint thread (store/checkpointer.ts starts it; the work is in
// store/wal-checkpoints.ts). Built by scripts/build.mjs as dist/workers/checkpoint.js.
const data = workerData as CheckpointWorkerData;
const port = parentPort!;
const checkpoints = new WalCheckpoints(data);
const timer = setInterval(() => {
  const result = checkpoints.tick();
  if (result) port.postMessage(result);
}, data.intervalMs);
port.on('message', (message) => {
  if (message !== 'stop') return;
  clearInterval(timer);
  port.postMessage(checkpoints.run()); // a last one before the appliance closes
  checkpoints.close();
  port.close();
});
