import { z } from 'zod';

/** A reader's or gateway's identifier: what it sends and logs in with (MQTT username, topic segment). One rule for
 * readers, gateways and the devices plugged into the box. */
export const deviceIdentifier = z
  .string()
  .trim()
  .min(1)
  .max(128)
  .regex(/^[A-Za-z0-9._:-]+$/, 'letters, digits, dot, underscore, colon and dash');
