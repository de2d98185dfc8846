import { stxFraming } from './rdm6300.js';
import type { FrameParser } from './types.js';

// ID Innovations ID-12 / ID-20 (ASCII output) framing: STX, 10 hex data characters, 2 hex
// checksum characters, CR, LF, ETX; e.g. `\x02 62E3086CED 08 \r\n \x03`. Checksum, value and
// resynchronisation are those of rdm6300.ts; an ETX where CR or LF belongs is 'malformed'.

export const createId12Parser = (): FrameParser => stxFraming([0x0d, 0x0a, 0x03]);
