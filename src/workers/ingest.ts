import { parentPort, workerData } from 'node:worker_threads';
import { type IngestWorkerData, JournalIngest, ingestLoop } from '../journal/journal-ingest.js';

// The access-event journal's ingest thread (journal/event-journal.ts starts it; the work is in
// journal/journal-ingest.ts). Built by scripts/build.mjs as dist/workers/ingest.js.
const data = workerData as IngestWorkerData;
const port = parentPort!;
const ingest = new JournalIngest(data);
ingestLoop(ingest, new Int32Array(data.shared), data.intervalMs, (message) => port.postMessage(message));
ingest.close();
