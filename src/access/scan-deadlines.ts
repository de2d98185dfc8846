import { Counter, type Registry } from 'prom-client';
import type { Module } from '../lifecycle.js';

// Every scan is answered within a bound, or its sender is let go (docs/mqtt.md:
// answered in bounded time). A transport takes its view of the deadlines once (tickets(): its
// tickets, and the listener told of its scans let go) and opens a ticket for each scan it waits
// on, with what it holds for that scan (an MQTT connection, which is closed so the reader sends
// the scan again; an HTTP request, answered 503 with Retry-After); the scan service notes what
// the scan waits on (its journal write, or the pending entry of an earlier scan with the same
// request_id); withTicket() closes the ticket when the scan is answered. This module knows no
// transport: it hands a scan let go back to its transport's listener with what it was given.
//
// The ring runs nothing per scan but a few typed-array writes: no timer, no promise, no object
// (withTicket chains one short-lived promise to the answer, to close its ticket). The
// tickets are a ring in begin order, and one timer every `intervalMs` advances past the closed
// ones and lets go of the open ones older than the bound. A ticket keeps the sweep count it was
// opened in rather than a clock reading, so a scan is let go after timeoutMs at the least and
// timeoutMs + intervalMs at the most (later only when the event loop itself is held up).

/** What a scan let go of was waiting on (logged, and the metric's `waiting_on`). */
export const WAITING_ON = ['decision', 'journal write', 'request-id pending entry'] as const;
export type WaitingOn = (typeof WAITING_ON)[number];
/** Stages the scan service notes on a ticket (indexes of WAITING_ON). */
export const JOURNAL_WRITE = 1;
export const PENDING_ENTRY = 2;

export const TRANSPORTS = ['mqtt', 'webhook', 'api'] as const;
export type Transport = (typeof TRANSPORTS)[number];

/** A transport's listener: told once per scan of its own let go, with the holder its ticket was opened with. */
export type DeadlinePassed<H> = (holder: H, waitingOn: WaitingOn, waitedMs: number) => void;

/** One transport's view of the deadlines (ScanDeadlines#tickets). */
export interface Tickets<H> {
  readonly timeoutMs: number;
  /** Whole seconds a sender should wait before sending again (Retry-After). */
  readonly retryAfterSeconds: number;
  /** Opens a ticket for a scan this transport waits on, with what it holds for it; close it with end(). */
  begin(holder: H): number;
  /** Closes a ticket (its scan was answered, or failed); a ticket already let go is left alone. */
  end(ticket: number): void;
}

/**
 * Answers a scan under a ticket: opened before `answer` runs (which passes the ticket to the scan
 * service), closed once the answer settles, or at once when there is none. Without tickets, the
 * scan is answered without one (ticket 0).
 */
export function withTicket<H, T>(
  tickets: Tickets<H> | null,
  holder: H,
  answer: (ticket: number) => Promise<T>,
): Promise<T>;
export function withTicket<H, T>(
  tickets: Tickets<H> | null,
  holder: H,
  answer: (ticket: number) => Promise<T> | null,
): Promise<T> | null;
export function withTicket<H, T>(
  tickets: Tickets<H> | null,
  holder: H,
  answer: (ticket: number) => Promise<T> | null,
): Promise<T> | null {
  if (!tickets) return answer(0);
  const ticket = tickets.begin(holder);
  const answering = answer(ticket);
  if (!answering) {
    tickets.end(ticket);
    return null;
  }
  return answering.then(
    (answered) => {
      tickets.end(ticket);
      return answered;
    },
    (err: unknown) => {
      tickets.end(ticket);
      throw err;
    },
  );
}

const FREE = 255;

export class ScanDeadlines implements Module {
  readonly name = 'answer deadlines';
  #mask = 1023;
  /**
   * Per slot: what the transport holds for the scan (given back to its listener), the sweep count when opened, the
   * stage (FREE: closed), the transport.
   */
  #holder: unknown[] = new Array<unknown>(1024);
  #opened = new Float64Array(1024);
  #stage = new Uint8Array(1024).fill(FREE);
  #transport = new Uint8Array(1024);
  /** Tickets are sequence numbers; slot = ticket & mask. [#oldest, #next) may be open. */
  #oldest = 1;
  #next = 1;
  #sweeps = 0;
  #timer: NodeJS.Timeout | null = null;
  /** Per transport (TRANSPORTS' index): its listener. */
  readonly #passed: (DeadlinePassed<unknown> | undefined)[] = [];
  readonly #timeouts: Counter<'transport' | 'waiting_on'>;
  readonly intervalMs: number;

  constructor(
    readonly timeoutMs: number,
    registry: Registry,
  ) {
    this.intervalMs = Math.max(10, Math.min(250, Math.floor(timeoutMs / 4)));
    this.#timeouts = new Counter({
      name: 'gatehouse_scan_answer_timeouts_total',
      help: 'Scans not answered within mqtt.answerTimeoutMs, by transport and what they were waiting on (the MQTT connection was closed; HTTP answered 503)',
      labelNames: ['transport', 'waiting_on'],
      registers: [registry],
    });
  }

  /** Whole seconds a sender should wait before sending again (Retry-After). */
  get retryAfterSeconds(): number {
    return Math.max(1, Math.ceil(this.timeoutMs / 1000));
  }

  start(): void {
    this.#timer = setInterval(() => this.sweep(), this.intervalMs);
    this.#timer.unref();
  }

  stop(): void {
    if (this.#timer) clearInterval(this.#timer);
    this.#timer = null;
  }

  /**
   * A transport's view: its tickets, and `passed` told of each of its scans let go. One per
   * transport (taken again, the listener is replaced): the holders of a transport's tickets are
   * the H its view was taken with.
   */
  tickets<H>(transport: Transport, passed: DeadlinePassed<H>): Tickets<H> {
    const index = TRANSPORTS.indexOf(transport);
    this.#passed[index] = passed as DeadlinePassed<unknown>;
    return {
      timeoutMs: this.timeoutMs,
      retryAfterSeconds: this.retryAfterSeconds,
      begin: (holder) => this.#begin(holder, index),
      end: (ticket) => this.end(ticket),
    };
  }

  #begin(holder: unknown, transport: number): number {
    if (this.#next - this.#oldest > this.#mask) {
      while (this.#oldest < this.#next && this.#stage[this.#oldest & this.#mask] === FREE) this.#oldest++;
      if (this.#next - this.#oldest > this.#mask) this.#grow();
    }
    const ticket = this.#next++;
    const slot = ticket & this.#mask;
    this.#holder[slot] = holder;
    this.#opened[slot] = this.#sweeps;
    this.#stage[slot] = 0;
    this.#transport[slot] = transport;
    return ticket;
  }

  /** Notes what the scan of an open ticket waits on now (0: no ticket). */
  waitingOn(ticket: number, stage: typeof JOURNAL_WRITE | typeof PENDING_ENTRY): void {
    if (ticket >= this.#oldest && this.#stage[ticket & this.#mask] !== FREE) this.#stage[ticket & this.#mask] = stage;
  }

  /** Closes a ticket (its scan was answered, or failed); a ticket already let go is left alone. */
  end(ticket: number): void {
    if (ticket < this.#oldest || ticket >= this.#next) return;
    const slot = ticket & this.#mask;
    this.#stage[slot] = FREE;
    this.#holder[slot] = undefined;
  }

  /** Lets go of the open tickets past the bound, oldest first (the timer's work; public for tests of the ring). */
  sweep(): void {
    const sweeps = ++this.#sweeps;
    // Opened in sweep period n, a ticket is at least (sweeps - n - 1) intervals old.
    const due = Math.ceil(this.timeoutMs / this.intervalMs) + 1;
    while (this.#oldest < this.#next) {
      const slot = this.#oldest & this.#mask;
      const stage = this.#stage[slot]!;
      if (stage !== FREE) {
        const age = sweeps - this.#opened[slot]!;
        if (age < due) return;
        const holder = this.#holder[slot];
        const transport = this.#transport[slot]!;
        this.#stage[slot] = FREE;
        this.#holder[slot] = undefined;
        const waitingOn = WAITING_ON[stage] ?? 'decision';
        this.#timeouts.inc({ transport: TRANSPORTS[transport]!, waiting_on: waitingOn });
        this.#passed[transport]?.(holder, waitingOn, (age - 1) * this.intervalMs);
      }
      this.#oldest++;
    }
  }

  /** How many tickets are open (for tests and the log). */
  get open(): number {
    let n = 0;
    for (let t = this.#oldest; t < this.#next; t++) if (this.#stage[t & this.#mask] !== FREE) n++;
    return n;
  }

  /** More tickets open than slots (a stalled journal at full rate): twice the room, in ticket order. */
  #grow(): void {
    const size = (this.#mask + 1) * 2;
    const mask = size - 1;
    const holder = new Array<unknown>(size);
    const opened = new Float64Array(size);
    const stage = new Uint8Array(size).fill(FREE);
    const transport = new Uint8Array(size);
    for (let t = this.#oldest; t < this.#next; t++) {
      const from = t & this.#mask;
      const to = t & mask;
      holder[to] = this.#holder[from];
      opened[to] = this.#opened[from]!;
      stage[to] = this.#stage[from]!;
      transport[to] = this.#transport[from]!;
    }
    this.#mask = mask;
    this.#holder = holder;
    this.#opened = opened;
    this.#stage = stage;
    this.#transport = transport;
  }
}
