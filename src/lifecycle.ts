import type { Logger } from './logger.js';

// One lifecycle for every long-lived module (docs/architecture.md, "Lifecycle"; Zigbee2MQTT's
// extensions, Fastify's reverse close). A module is built with its dependencies and does
// nothing until start(); the app holds the modules in one ordered list, starts them in order
// and stops them in reverse, each stop on its own so one failure does not keep the rest open.

export interface Module {
  /** For the log: which module started, failed to stop. */
  readonly name: string;
  start(): void | Promise<void>;
  stop(): void | Promise<void>;
}

/** A module made of two functions, for parts whose start or stop needs arguments. */
export function module(name: string, start: () => unknown, stop: () => unknown = () => {}): Module {
  return {
    name,
    start: async () => void (await start()),
    stop: async () => void (await stop()),
  };
}

export class Lifecycle {
  /** Started modules, in start order. */
  readonly #started: Module[] = [];

  constructor(private readonly log: Logger) {}

  /** The names of the started modules, in start order. */
  get started(): string[] {
    return this.#started.map((m) => m.name);
  }

  /**
   * Starts the modules in order, after those already started. A module that fails to start
   * stops the ones started before it (in reverse) and the error is thrown: nothing is left
   * half-running.
   */
  async start(modules: readonly Module[]): Promise<void> {
    for (const m of modules) {
      const since = performance.now();
      try {
        await m.start();
      } catch (err) {
        this.log.error({ err, module: m.name }, 'module failed to start; stopping the others');
        await this.stop();
        throw err;
      }
      this.#started.push(m);
      this.log.debug({ module: m.name, ms: Math.round(performance.now() - since) }, 'module started');
    }
  }

  /** Stops every started module in reverse order, each in its own try/catch with a log line. */
  async stop(): Promise<void> {
    for (let m = this.#started.pop(); m; m = this.#started.pop()) {
      try {
        await m.stop();
        this.log.debug({ module: m.name }, 'module stopped');
      } catch (err) {
        this.log.error({ err, module: m.name }, 'module failed to stop');
      }
    }
  }
}
