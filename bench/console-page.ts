// bench:console's probe inside the page (Page.addScriptToEvaluateOnNewDocument, so it runs before the
// console's own code on every document). It measures the page from within and keeps its figures
// on `window.__benchProbe` for the bench to read:
//   frames      requestAnimationFrame callbacks per 1-s window since start() (a rAF loop of its own,
//               counted by each frame's timestamp), so a window the main thread spent blocked shows
//               as few frames, not as a gap
//   longTaskMs  the main thread's long tasks (PerformanceObserver 'longtask', over 50 ms each) per window
//   marks       for each marker credential (`MARK-…`), Date.now() when a feed row showing it was first
//               inserted into the document: a MutationObserver callback, which runs right after the
//               DOM change that inserted it, before that frame is painted
//   socketEvents AccessGranted / AccessDenied messages the page's WebSockets received since start()
//               (WebSocket wrapped: one more message listener, a test of each message's first 64 characters)
// The function must stay self-contained: its source text is what the page runs.

export interface Probe {
  /** performance.now() of start(); -1 before it. */
  t0: number;
  frames: number[];
  longTaskMs: number[];
  marks: Record<string, number>;
  socketEvents: number;
  /** Every message the page's WebSockets received since start(). */
  socketMessages: number;
  /** Starts a new phase: windows count from now, frames and long tasks of earlier phases dropped. */
  start(): void;
}

export type ProbeWindow = Window & { __benchProbe: Probe };

export function installProbe(markerPrefix: string): void {
  const probe: Probe = {
    t0: -1,
    frames: [],
    longTaskMs: [],
    marks: {},
    socketEvents: 0,
    socketMessages: 0,
    start() {
      probe.t0 = performance.now();
      probe.frames = [];
      probe.longTaskMs = [];
      probe.socketEvents = 0;
      probe.socketMessages = 0;
    },
  };
  (window as unknown as ProbeWindow).__benchProbe = probe;
  const windowOf = (t: number) => Math.floor((t - probe.t0) / 1000);

  const frame = (t: number) => {
    if (probe.t0 >= 0 && t >= probe.t0) {
      const w = windowOf(t);
      probe.frames[w] = (probe.frames[w] ?? 0) + 1;
    }
    requestAnimationFrame(frame);
  };
  requestAnimationFrame(frame);

  new PerformanceObserver((list) => {
    for (const entry of list.getEntries()) {
      if (probe.t0 < 0 || entry.startTime < probe.t0) continue;
      const w = windowOf(entry.startTime);
      probe.longTaskMs[w] = (probe.longTaskMs[w] ?? 0) + entry.duration;
    }
  }).observe({ type: 'longtask', buffered: false });

  const Native = window.WebSocket;
  window.WebSocket = class extends Native {
    constructor(url: string | URL, protocols?: string | string[]) {
      super(url, protocols);
      // Pusher frames start with the event's name (`{"event":"AccessGranted",…`): only their head is read.
      this.addEventListener('message', (e: MessageEvent) => {
        probe.socketMessages++;
        if (typeof e.data !== 'string') return;
        const head = e.data.slice(0, 64);
        if (head.includes('AccessGranted"') || head.includes('AccessDenied"')) probe.socketEvents++;
      });
    }
  };

  const ROW = '[data-testid=feed-row]';
  const note = (row: Element) => {
    const who = row.querySelector('[data-testid=feed-who]')?.textContent ?? '';
    if (who.startsWith(markerPrefix) && probe.marks[who] === undefined) probe.marks[who] = Date.now();
  };
  new MutationObserver((records) => {
    for (const record of records) {
      for (const node of record.addedNodes) {
        if (!(node instanceof Element)) continue;
        if (node.matches(ROW)) note(node);
        else for (const row of node.querySelectorAll(ROW)) note(row);
      }
    }
  }).observe(document, { childList: true, subtree: true });
}
