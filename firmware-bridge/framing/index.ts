import { createId12Parser } from './id12.js';
import { createLineParser } from './line.js';
import { createRdm6300Parser } from './rdm6300.js';
import type { FrameParser, SerialFraming } from './types.js';
import { createWiegandParser } from './wiegand.js';

// The byte-stream framings of serial readers: the bridge picks one per port by its configured
// name and feeds it whatever the port delivers. Each call gives a parser with its own state.

export * from './types.js';

const FRAMINGS: Record<SerialFraming, () => FrameParser> = {
  line: createLineParser,
  rdm6300: createRdm6300Parser,
  id12: createId12Parser,
  wiegand26: () => createWiegandParser(26),
  wiegand34: () => createWiegandParser(34),
};

export const createParser = (framing: SerialFraming): FrameParser => FRAMINGS[framing]();
