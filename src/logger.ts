import { pino, type Logger } from 'pino';
import type { Config } from './config/schema.js';

export type { Logger };

/** JSON lines by default; pretty when writing to a terminal (or when asked). */
export function createLogger(log: Config['log'], destination?: NodeJS.WritableStream): Logger {
  const pretty = log.pretty === 'always' || (log.pretty === 'auto' && !destination && process.stdout.isTTY);
  const options = {
    level: log.level,
    base: { app: 'gatehouse' },
    // Never log secrets, wherever they show up in a logged object.
    redact: [
      'password',
      '*.password',
      'token',
      '*.token',
      'secret',
      '*.secret',
      'req.headers.authorization',
      'req.headers.cookie',
    ],
  };
  if (pretty)
    return pino({ ...options, transport: { target: 'pino-pretty', options: { translateTime: 'SYS:standard' } } });
  return destination ? pino(options, destination as never) : pino(options);
}
