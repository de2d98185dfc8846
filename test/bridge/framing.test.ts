import { describe, expect, it } from 'vitest';
import {
  createParser,
  type Frame,
  type FrameParser,
  MAX_LINE_BYTES,
  SERIAL_FRAMINGS,
  type SerialFraming,
} from '../../firmware-bridge/framing/index.js';

// The serial framings on real byte sequences. Each framing's known-good frame is written out as
// bytes and checked by hand first; the builders below (checksum, parities) work on strings of hex
// and bits, not the parsers' arithmetic, and are themselves checked against those literals.
// A parser must give the same frames however the bytes are cut, so most streams are run whole,
// cut in two at every offset and byte by byte.

const STX = '\x02';
const ETX = '\x03';
const bytes = (text: string): Buffer => Buffer.from(text, 'latin1');

/** XOR of the 5 bytes that 10 hex characters encode, as 2 upper-case hex characters. */
function em4100Checksum(data: string): string {
  let xor = 0;
  for (let i = 0; i < 10; i += 2) xor ^= Number.parseInt(data.slice(i, i + 2), 16);
  return xor.toString(16).toUpperCase().padStart(2, '0');
}
const rdm6300Frame = (data: string, checksum = em4100Checksum(data)): Buffer => bytes(`${STX}${data}${checksum}${ETX}`);
const id12Frame = (data: string, checksum = em4100Checksum(data)): Buffer =>
  bytes(`${STX}${data}${checksum}\r\n${ETX}`);

type Bits = 26 | 34;
/** The Wiegand bits, MSB first, as a string of 0s and 1s with both parities computed by counting. */
function wiegandBits(bits: Bits, facility: number, card: number): string {
  const half = (bits - 2) / 2;
  const data = facility.toString(2).padStart(bits - 18, '0') + card.toString(2).padStart(16, '0');
  const onesIn = (s: string) => [...s].filter((c) => c === '1').length;
  const even = onesIn(data.slice(0, half)) % 2 === 1 ? '1' : '0';
  const odd = onesIn(data.slice(half)) % 2 === 1 ? '0' : '1';
  return `${even}${data}${odd}`;
}
const bitsToHex = (bitString: string): string => BigInt(`0b${bitString}`).toString(16).toUpperCase();
/** Bit `n` (1 = MSB) turned over. */
const flip = (bitString: string, n: number): string =>
  bitString.slice(0, n - 1) + (bitString[n - 1] === '1' ? '0' : '1') + bitString.slice(n);
const wiegandLine = (bits: Bits, facility: number, card: number): Buffer =>
  bytes(`${bitsToHex(wiegandBits(bits, facility, card))}\r\n`);

/** Good frames as their value, bad ones as `!reason`: short enough to compare whole streams. */
const show = (frames: Frame[]): string[] => frames.map((f) => (f.ok ? f.value : `!${f.reason}`));
const detailOf = (frames: Frame[]): string[] => frames.map((f) => (f.ok ? '' : f.detail));
const feed = (parser: FrameParser, chunks: Buffer[]): Frame[] => chunks.flatMap((chunk) => parser.push(chunk));

const byteByByte = (stream: Buffer): Buffer[] => [...stream].map((b) => Buffer.from([b]));

/** Every way a stream is cut here: whole, in two at each offset (empty halves too), byte by byte. */
function cuts(stream: Buffer): [string, Buffer[]][] {
  const ways: [string, Buffer[]][] = [['one chunk', [stream]]];
  for (let at = 0; at <= stream.length; at++)
    ways.push([`cut at ${at}`, [stream.subarray(0, at), stream.subarray(at)]]);
  ways.push(['byte by byte', byteByByte(stream)]);
  return ways;
}

/** The frames of `stream` in one chunk, after checking that every other cut gives exactly those (details too). */
function framesUnderEveryCut(framing: SerialFraming, stream: Buffer): Frame[] {
  const whole = feed(createParser(framing), [stream]);
  for (const [how, chunks] of cuts(stream))
    expect(feed(createParser(framing), chunks), `${framing}, ${how}`).toEqual(whole);
  return whole;
}

describe('line framing', () => {
  const lines = (stream: Buffer) => framesUnderEveryCut('line', stream);

  it('decodes a literal line ended by CR LF', () => {
    // "0400E1F2" CR LF, as a keyboard-mode reader sends it
    const literal = Buffer.from([0x30, 0x34, 0x30, 0x30, 0x45, 0x31, 0x46, 0x32, 0x0d, 0x0a]);
    expect(lines(literal)).toEqual([{ ok: true, value: '0400E1F2' }]);
  });

  it('accepts CR-only, LF-only and CR LF terminators, mixed in one stream', () => {
    expect(show(lines(bytes('cr\rlf\ncrlf\r\nlast\r')))).toEqual(['cr', 'lf', 'crlf', 'last']);
  });

  it('gives several lines in one chunk and back-to-back lines under every cut', () => {
    expect(show(lines(bytes('A1\r\nB2\r\nC3\r\nD4\n')))).toEqual(['A1', 'B2', 'C3', 'D4']);
  });

  it('ends a line at its CR at once, and gives no frame for an LF opening the next chunk', () => {
    const parser = createParser('line');
    expect(parser.push(bytes('abc\r'))).toEqual([{ ok: true, value: 'abc' }]);
    expect(parser.push(bytes('\n'))).toEqual([]);
    expect(parser.push(bytes('def\r'))).toEqual([{ ok: true, value: 'def' }]);
    expect(parser.push(bytes('\nghi\n'))).toEqual([{ ok: true, value: 'ghi' }]);
  });

  it('trims spaces and tabs around the text and keeps those inside it', () => {
    expect(show(lines(bytes(' \t a b\tc \t\r\n')))).toEqual(['a b\tc']);
  });

  it('skips blank lines without a frame', () => {
    const parser = createParser('line');
    expect(parser.push(bytes('\r\n\n \t\r\r\r\n   \n'))).toEqual([]);
    expect(show(parser.push(bytes('x\n')))).toEqual(['x']);
    expect(lines(bytes('\n\r\n  \r\nx\n\t\n'))).toEqual([{ ok: true, value: 'x' }]);
  });

  it('decodes UTF-8 text even when a character is cut between chunks', () => {
    expect(show(lines(Buffer.from('Zoë Müller 🎫\r\n', 'utf8')))).toEqual(['Zoë Müller 🎫']);
  });

  it(`accepts a line of exactly ${MAX_LINE_BYTES} bytes`, () => {
    expect(show(lines(bytes(`${'7'.repeat(MAX_LINE_BYTES)}\n`)))).toEqual(['7'.repeat(MAX_LINE_BYTES)]);
  });

  it('reports a longer line once as overlong, drops it to its terminator and decodes the next line', () => {
    const frames = lines(bytes(`${'7'.repeat(MAX_LINE_BYTES + 1)}\r\nnext\r\n`));
    expect(show(frames)).toEqual(['!overlong', 'next']);
    expect(detailOf(frames)[0]).toBe(`line longer than ${MAX_LINE_BYTES} bytes`);
    expect(show(lines(bytes(`${'x'.repeat(700)}\rnext\r`)))).toEqual(['!overlong', 'next']);
  });

  it('counts the spaces of a line toward its bound', () => {
    expect(show(lines(bytes(`a${' '.repeat(MAX_LINE_BYTES)}\nb\n`)))).toEqual(['!overlong', 'b']);
  });

  it('reports an overlong line as soon as it passes the bound, before its terminator arrives', () => {
    const parser = createParser('line');
    expect(show(parser.push(bytes('x'.repeat(MAX_LINE_BYTES + 1))))).toEqual(['!overlong']);
    expect(parser.push(bytes('y'.repeat(1000)))).toEqual([]);
    expect(parser.push(bytes('\r'))).toEqual([]);
    expect(show(parser.push(bytes('\nok\n')))).toEqual(['ok']);
  });

  it.each([
    ['NUL', [0x00]],
    ['BEL', [0x07]],
    ['ESC', [0x1b]],
    ['DEL', [0x7f]],
    ['a lone 0xFF', [0xff]],
    ['a cut 3-byte sequence', [0xe2, 0x82]],
    ['an over-long encoding of "/"', [0xc0, 0xaf]],
    ['a UTF-16 surrogate', [0xed, 0xa0, 0x80]],
  ])('reports a line holding %s as not_text and decodes the next line', (_name, bad) => {
    const frames = lines(Buffer.concat([bytes('ok1\nab'), Buffer.from(bad), bytes('cd\r\nok2\r\n')]));
    expect(show(frames)).toEqual(['ok1', '!not_text', 'ok2']);
    expect(detailOf(frames)[1]).not.toBe('');
  });

  it('names the control byte in the detail', () => {
    expect(detailOf(lines(bytes('a\x07b\n')))).toEqual(['control byte 0x07 in line']);
    expect(detailOf(lines(Buffer.from([0x61, 0xff, 0x0a])))).toEqual(['line is not valid UTF-8']);
  });

  it('gives the same frames, details included, for a mixed stream under every cut', () => {
    const stream = Buffer.concat([
      bytes(`first\r\n${'x'.repeat(300)}\r\n\r\n bad\x01 \n`),
      Buffer.from([0xc3, 0x28, 0x0d]),
      bytes('last\r'),
    ]);
    expect(show(lines(stream))).toEqual(['first', '!overlong', '!not_text', '!not_text', 'last']);
  });

  it('drops an unterminated line on reset as one partial, never gluing it to the next', () => {
    const parser = createParser('line');
    expect(parser.push(bytes('abc'))).toEqual([]);
    expect(show(parser.reset())).toEqual(['!partial']);
    expect(show(parser.push(bytes('def\n')))).toEqual(['def']);
  });

  it('answers reset with nothing when no text is pending', () => {
    const parser = createParser('line');
    expect(parser.reset()).toEqual([]);
    expect(parser.push(bytes('a\n  \t'))).toEqual([{ ok: true, value: 'a' }]);
    expect(parser.reset()).toEqual([]);
    expect(show(parser.push(bytes('b\n')))).toEqual(['b']);
  });

  it('does not report an overlong line again on reset, and starts clean after it', () => {
    const parser = createParser('line');
    expect(show(parser.push(bytes('x'.repeat(MAX_LINE_BYTES + 10))))).toEqual(['!overlong']);
    expect(parser.reset()).toEqual([]);
    expect(show(parser.push(bytes('y\n')))).toEqual(['y']);
  });

  it('starts clean after a reset that follows a CR', () => {
    const parser = createParser('line');
    expect(show(parser.push(bytes('a\r')))).toEqual(['a']);
    expect(parser.reset()).toEqual([]);
    expect(show(parser.push(bytes('\nb\n')))).toEqual(['b']);
  });
});

describe('rdm6300 framing', () => {
  const frames = (stream: Buffer) => framesUnderEveryCut('rdm6300', stream);

  // EM4100 card 62 E3 08 6C ED: 62^E3 = 81, 81^08 = 89, 89^6C = E5, E5^ED = 08, so checksum 08.
  const literal = Buffer.from([0x02, 0x36, 0x32, 0x45, 0x33, 0x30, 0x38, 0x36, 0x43, 0x45, 0x44, 0x30, 0x38, 0x03]);

  it('decodes a literal EM4100 frame', () => {
    expect(frames(literal)).toEqual([{ ok: true, value: '62E3086CED' }]);
  });

  it('builds the same bytes as the literal (the helper is right)', () => {
    expect(rdm6300Frame('62E3086CED')).toEqual(literal);
  });

  it('reads lower-case hex and gives the value in upper case', () => {
    expect(show(frames(bytes(`${STX}62e3086ced08${ETX}`)))).toEqual(['62E3086CED']);
  });

  it('decodes frames back to back in one chunk and under every cut', () => {
    const stream = Buffer.concat([
      rdm6300Frame('0F002A3B4C'),
      literal,
      rdm6300Frame('0000000000'),
      rdm6300Frame('FFFFFFFFFF'),
    ]);
    expect(show(frames(stream))).toEqual(['0F002A3B4C', '62E3086CED', '0000000000', 'FFFFFFFFFF']);
  });

  it('takes an ID-12 frame (CR LF before ETX) as one malformed frame', () => {
    const got = frames(Buffer.concat([id12Frame('62E3086CED'), literal]));
    expect(show(got)).toEqual(['!malformed', '62E3086CED']);
    expect(detailOf(got)[0]).toBe('CR where ETX was expected');
  });
});

describe('id12 framing', () => {
  const frames = (stream: Buffer) => framesUnderEveryCut('id12', stream);

  // The same card as the rdm6300 literal, ID-12 framed: STX, 62E3086CED, 08, CR, LF, ETX.
  const literal = Buffer.from([
    0x02, 0x36, 0x32, 0x45, 0x33, 0x30, 0x38, 0x36, 0x43, 0x45, 0x44, 0x30, 0x38, 0x0d, 0x0a, 0x03,
  ]);
  // 01^02 = 03, 03^03 = 00, 00^04 = 04, 04^05 = 01: checksum 01.
  const second = Buffer.from([
    0x02, 0x30, 0x31, 0x30, 0x32, 0x30, 0x33, 0x30, 0x34, 0x30, 0x35, 0x30, 0x31, 0x0d, 0x0a, 0x03,
  ]);

  it('decodes literal ID-12 frames', () => {
    expect(show(frames(Buffer.concat([literal, second])))).toEqual(['62E3086CED', '0102030405']);
  });

  it('builds the same bytes as the literals (the helper is right)', () => {
    expect(id12Frame('62E3086CED')).toEqual(literal);
    expect(id12Frame('0102030405')).toEqual(second);
  });

  it('decodes frames back to back in one chunk and under every cut', () => {
    const stream = Buffer.concat([id12Frame('0F002A3B4C'), literal, id12Frame('abcdef0123'), second]);
    expect(show(frames(stream))).toEqual(['0F002A3B4C', '62E3086CED', 'ABCDEF0123', '0102030405']);
  });

  it.each([
    ['no CR LF', `${STX}62E3086CED08${ETX}`, 'ETX where CR was expected'],
    ['CR without LF', `${STX}62E3086CED08\r${ETX}`, 'ETX where LF was expected'],
    ['LF CR swapped', `${STX}62E3086CED08\n\r${ETX}`, 'LF where CR was expected'],
    ['a hex character after CR', `${STX}62E3086CED08\r0\n${ETX}`, '0x30 where LF was expected'],
  ])('reports a frame with %s as one malformed frame and decodes the next', (_name, bad, detail) => {
    const got = frames(Buffer.concat([bytes(bad), literal]));
    expect(show(got)).toEqual(['!malformed', '62E3086CED']);
    expect(detailOf(got)[0]).toBe(detail);
  });
});

// What goes wrong between and inside STX frames, the same for both STX framings.
describe.each([
  ['rdm6300', rdm6300Frame],
  ['id12', id12Frame],
] as const)('%s resynchronisation', (framing, frame) => {
  const frames = (stream: Buffer) => framesUnderEveryCut(framing, stream);
  const good = frame('62E3086CED');
  const next = frame('0F002A3B4C');

  it.each([
    ['a wrong checksum', frame('62E3086CED', '09'), 'checksum', 'checksum 09, expected 08'],
    ['garbage bytes', bytes('noise\r\n'), 'garbage', '7 stray bytes outside a frame: 6E 6F 69 73 65 0D 0A'],
    ['a lone ETX', bytes(ETX), 'garbage', '1 stray byte outside a frame: 03'],
    [
      'a long garbage run',
      bytes('z'.repeat(100)),
      'garbage',
      '100 stray bytes outside a frame: 7A 7A 7A 7A 7A 7A 7A 7A …',
    ],
    [
      'a frame cut short by a new STX',
      frame('62E3086CED').subarray(0, 6),
      'partial',
      `frame cut by a new STX after 6 of ${good.length} bytes`,
    ],
    ['a lone STX', bytes(STX), 'partial', `frame cut by a new STX after 1 of ${good.length} bytes`],
    ['a non-hex character', frame('62E3G86CED', '08'), 'malformed', '0x47 at hex character 5 is not hex'],
    [
      'too few hex characters',
      frame('62E3086C', '08'),
      'malformed',
      `${framing === 'id12' ? 'CR' : 'ETX'} after 10 hex characters, expected 12`,
    ],
    ['too many hex characters', frame('62E3086CED00', '08'), 'malformed', 'more than 12 hex characters'],
    ['an overlong frame that never ends', bytes(`${STX}${'0'.repeat(40)}`), 'malformed', 'more than 12 hex characters'],
    ['a frame of no characters', bytes(`${STX}${ETX}`), 'malformed', 'ETX after 0 hex characters, expected 12'],
  ])('reports %s between good frames as exactly one bad frame, under every cut', (_name, bad, reason, detail) => {
    const got = frames(Buffer.concat([good, bad, next]));
    expect(show(got)).toEqual(['62E3086CED', `!${reason}`, '0F002A3B4C']);
    expect(detailOf(got)[1]).toBe(detail);
  });

  it('reports garbage before the first frame when that frame starts', () => {
    const parser = createParser(framing);
    expect(parser.push(bytes('\r\n\x00junk'))).toEqual([]);
    expect(show(parser.push(good))).toEqual(['!garbage', '62E3086CED']);
  });

  it('reports a garbage run cut across chunks once, with all its bytes counted', () => {
    const parser = createParser(framing);
    expect(parser.push(bytes('ab'))).toEqual([]);
    expect(parser.push(bytes('cd'))).toEqual([]);
    expect(parser.push(Buffer.concat([bytes('e'), good]))).toEqual([
      { ok: false, reason: 'garbage', detail: '5 stray bytes outside a frame: 61 62 63 64 65' },
      { ok: true, value: '62E3086CED' },
    ]);
  });

  it('reports garbage after the last frame on reset', () => {
    const parser = createParser(framing);
    expect(show(parser.push(Buffer.concat([good, bytes('tail')])))).toEqual(['62E3086CED']);
    expect(parser.reset()).toEqual([
      { ok: false, reason: 'garbage', detail: '4 stray bytes outside a frame: 74 61 69 6C' },
    ]);
    expect(parser.reset()).toEqual([]);
  });

  it('drops a frame in progress on reset as one partial, and decodes the next frame clean', () => {
    const parser = createParser(framing);
    expect(parser.push(good.subarray(0, 9))).toEqual([]);
    expect(parser.reset()).toEqual([
      { ok: false, reason: 'partial', detail: `frame cut by reset after 9 of ${good.length} bytes` },
    ]);
    // The rest of the cut frame is garbage now, not the end of a frame.
    expect(show(parser.push(Buffer.concat([good.subarray(9), next])))).toEqual(['!garbage', '0F002A3B4C']);
    expect(parser.push(good.subarray(0, 1))).toEqual([]);
    expect(show(parser.reset())).toEqual(['!partial']);
    expect(show(parser.push(good))).toEqual(['62E3086CED']);
  });

  it('does not report a malformed frame again on reset or when its rest arrives', () => {
    const parser = createParser(framing);
    expect(show(parser.push(bytes(`${STX}62E3X`)))).toEqual(['!malformed']);
    expect(parser.push(bytes(`86CED08\r\n${ETX}`))).toEqual([]);
    expect(show(parser.push(bytes(`${STX}zz`)))).toEqual(['!malformed']);
    expect(parser.reset()).toEqual([]);
    expect(show(parser.push(next))).toEqual(['0F002A3B4C']);
  });

  it('gives the same frames, details included, for a stream of every kind of trouble under every cut', () => {
    const stream = Buffer.concat([
      bytes('~~'),
      good,
      frame('62E3086CED', 'AA'),
      bytes('\r\n'),
      good.subarray(0, 5),
      next,
      bytes(`${STX}12345G`),
      good,
      bytes(ETX),
    ]);
    expect(show(frames(stream))).toEqual([
      '!garbage',
      '62E3086CED',
      '!checksum',
      '!garbage',
      '!partial',
      '0F002A3B4C',
      '!malformed',
      '62E3086CED',
    ]);
    const parser = createParser(framing);
    feed(parser, [stream]);
    expect(show(parser.reset())).toEqual(['!garbage']);
  });
});

describe.each([
  // facility 123 = 0111 1011, card 45678 = 1011 0010 0110 1110. Bits 2-13 hold 9 ones: even
  // parity 1; bits 14-25 hold 6: odd parity 1. 1 01111011 1011001001101110 1 = 0x2F764DD.
  [26, '2F764DD', '123:45678'],
  // facility 1234 = 0x04D2 (5 ones: even parity 1), card 56789 = 0xDDD5 (11 ones: odd parity 0).
  // 1 0000010011010010 1101110111010101 0 = 0x209A5BBAA.
  [34, '209A5BBAA', '1234:56789'],
] as const)('wiegand%i framing', (bits, literalHex, literalValue) => {
  const framing: SerialFraming = bits === 26 ? 'wiegand26' : 'wiegand34';
  const frames = (stream: Buffer) => framesUnderEveryCut(framing, stream);
  const half = (bits - 2) / 2;
  const maxFacility = bits === 26 ? 255 : 65535;
  const line = (facility: number, card: number) => wiegandLine(bits, facility, card);
  const bitLine = (bitString: string) => bytes(`${bitsToHex(bitString)}\r\n`);

  it('decodes a literal line', () => {
    expect(frames(bytes(`${literalHex}\r\n`))).toEqual([{ ok: true, value: literalValue }]);
  });

  it('builds the same hex as the literal (the helper is right)', () => {
    const [facility, card] = literalValue.split(':').map(Number) as [number, number];
    expect(bitsToHex(wiegandBits(bits, facility, card))).toBe(literalHex);
  });

  it('gives facility and card in decimal without padding, at both ends of their ranges', () => {
    const cases: [number, number][] = [
      [0, 0],
      [0, 7],
      [1, 1],
      [maxFacility, 65535],
      [maxFacility, 0],
      [0, 65535],
      [bits === 26 ? 200 : 40000, 12345],
    ];
    const stream = Buffer.concat(cases.map(([f, c]) => line(f, c)));
    expect(show(frames(stream))).toEqual(cases.map(([f, c]) => `${f}:${c}`));
  });

  it('accepts an 0x prefix, either case, leading zeros and spaces around the number', () => {
    const lower = literalHex.toLowerCase();
    const stream = bytes(`0x${literalHex}\n0X${lower}\r\n000000${literalHex}\r  \t${lower} \t\n 0x00${literalHex}\n`);
    expect(show(frames(stream))).toEqual(Array(5).fill(literalValue));
  });

  it('accepts CR-only, LF-only and CR LF terminators and skips blank lines', () => {
    expect(show(frames(bytes(`\r\n${literalHex}\r${literalHex}\n\n  \n${literalHex}\r\n\r\n`)))).toEqual(
      Array(3).fill(literalValue),
    );
  });

  it('decodes several lines in one chunk, back to back, under every cut', () => {
    expect(show(frames(Buffer.concat([line(1, 2), line(3, 4), line(5, 6)])))).toEqual(['1:2', '3:4', '5:6']);
  });

  it('reports a wrong even parity bit (bit 1) and decodes the next line', () => {
    const got = frames(Buffer.concat([bitLine(flip(wiegandBits(bits, 123, 4567), 1)), line(9, 10)]));
    expect(show(got)).toEqual(['!parity', '9:10']);
    expect(detailOf(got)[0]).toBe(`even parity (bit 1 over bits 2-${half + 1}) wrong`);
  });

  it(`reports a wrong odd parity bit (bit ${bits}) and decodes the next line`, () => {
    const got = frames(Buffer.concat([bitLine(flip(wiegandBits(bits, 123, 4567), bits)), line(9, 10)]));
    expect(show(got)).toEqual(['!parity', '9:10']);
    expect(detailOf(got)[0]).toBe(`odd parity (bit ${bits} over bits ${half + 2}-${bits - 1}) wrong`);
  });

  it('reports both parities wrong as one bad frame naming both', () => {
    const bad = flip(flip(wiegandBits(bits, 123, 4567), 1), bits);
    const got = frames(Buffer.concat([bitLine(bad), line(9, 10)]));
    expect(show(got)).toEqual(['!parity', '9:10']);
    expect(detailOf(got)[0]).toMatch(/^even parity .* wrong; odd parity .* wrong$/);
  });

  it('catches every single flipped bit with the parity that covers it', () => {
    const good = wiegandBits(bits, 201, 51234);
    for (let n = 1; n <= bits; n++) {
      const got = feed(createParser(framing), [bitLine(flip(good, n))]);
      expect(show(got), `bit ${n}`).toEqual(['!parity']);
      expect(detailOf(got)[0], `bit ${n}`).toMatch(n <= half + 1 ? /^even parity/ : /^odd parity/);
    }
  });

  it.each([
    ['a value of 2^bits', () => (2n ** BigInt(bits)).toString(16), 'wider than'],
    ['all ones one digit wider', () => 'F'.repeat(bits === 26 ? 8 : 10), 'wider than'],
    ['a very long hex number', () => 'F'.repeat(200), 'wider than'],
    ['a word', () => 'hello', 'not a hex number'],
    ['a space inside', () => '2F 764DD', 'not a hex number'],
    ['a bare 0x', () => '0x', 'not a hex number'],
    ['a sign', () => '-1', 'not a hex number'],
    ['an x prefix without 0', () => 'x2F764DD', 'not a hex number'],
    ['a control byte', () => '2F7\x0764DD', 'not a hex number'],
    ['a non-ASCII byte', () => '2F7\xe964DD', 'not a hex number'],
  ])('reports %s as one malformed frame and decodes the next line', (_name, text, detail) => {
    const got = frames(Buffer.concat([bytes(`${text()}\r\n`), line(9, 10)]));
    expect(show(got)).toEqual(['!malformed', '9:10']);
    expect(detailOf(got)[0]).toContain(detail);
  });

  it('quotes a malformed line in its detail', () => {
    expect(detailOf(frames(bytes('hello\n')))).toEqual(['"hello" is not a hex number']);
    expect(detailOf(frames(bytes('0x123456789ABCDEF\n')))).toEqual([`"0x123456789ABCDEF" is wider than ${bits} bits`]);
  });

  it('reports an overlong line once and decodes the next line', () => {
    expect(show(frames(Buffer.concat([bytes(`${'0'.repeat(MAX_LINE_BYTES + 1)}\r\n`), line(9, 10)])))).toEqual([
      '!overlong',
      '9:10',
    ]);
  });

  it('drops a cut line on reset as one partial, never gluing it to the next', () => {
    const parser = createParser(framing);
    const whole = line(123, 4567);
    expect(parser.push(whole.subarray(0, 3))).toEqual([]);
    expect(show(parser.reset())).toEqual(['!partial']);
    expect(show(parser.push(whole))).toEqual(['123:4567']);
  });
});

describe('createParser', () => {
  const sample: Record<SerialFraming, Buffer> = {
    line: bytes('hello\r\n'),
    rdm6300: rdm6300Frame('62E3086CED'),
    id12: id12Frame('62E3086CED'),
    wiegand26: wiegandLine(26, 123, 45678),
    wiegand34: wiegandLine(34, 1234, 56789),
  };
  const value: Record<SerialFraming, string> = {
    line: 'hello',
    rdm6300: '62E3086CED',
    id12: '62E3086CED',
    wiegand26: '123:45678',
    wiegand34: '1234:56789',
  };

  it.each(SERIAL_FRAMINGS)('gives each %s parser its own state', (framing) => {
    const a = createParser(framing);
    const b = createParser(framing);
    const frame = sample[framing];
    expect(a.push(frame.subarray(0, 3))).toEqual([]);
    expect(show(b.push(frame))).toEqual([value[framing]]);
    expect(show(a.push(frame.subarray(3)))).toEqual([value[framing]]);
  });

  it.each(SERIAL_FRAMINGS)('%s keeps no reference to the chunks it was given', (framing) => {
    const parser = createParser(framing);
    const frame = sample[framing];
    const head = Buffer.from(frame.subarray(0, 4));
    expect(parser.push(head)).toEqual([]);
    head.fill(0x5a); // the serial port reuses its buffer
    expect(show(parser.push(frame.subarray(4)))).toEqual([value[framing]]);
  });
});

// Random streams of good frames, broken frames and noise: whatever the bytes, a parser never
// throws, gives the same frames however they are cut, gives a detail with every bad frame, and
// after reset() the next good frame comes out clean.
describe('every framing on random streams', () => {
  function random(seed: number): () => number {
    let state = seed >>> 0;
    return () => {
      state = (state + 0x6d2b79f5) >>> 0;
      let t = state;
      t = Math.imul(t ^ (t >>> 15), t | 1);
      t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
      return ((t ^ (t >>> 14)) >>> 0) / 2 ** 32;
    };
  }
  const randomHex = (r: () => number, digits: number) =>
    Array.from({ length: digits }, () => '0123456789abcdefABCDEF'[Math.floor(r() * 22)]).join('');
  const good: Record<SerialFraming, (r: () => number) => Buffer> = {
    line: (r) => bytes(`card-${Math.floor(r() * 1e6)}\r\n`),
    rdm6300: (r) => rdm6300Frame(randomHex(r, 10)),
    id12: (r) => id12Frame(randomHex(r, 10)),
    wiegand26: (r) => wiegandLine(26, Math.floor(r() * 256), Math.floor(r() * 65536)),
    wiegand34: (r) => wiegandLine(34, Math.floor(r() * 65536), Math.floor(r() * 65536)),
  };
  const special = [0x02, 0x03, 0x0d, 0x0a, 0x00, 0x20, 0x30, 0x41, 0x78, 0xff];

  function randomStream(framing: SerialFraming, r: () => number): Buffer {
    const parts: Buffer[] = [];
    for (let n = Math.floor(r() * 8); n >= 0; n--) {
      const frame = good[framing](r);
      const pick = r();
      if (pick < 0.4) parts.push(frame);
      else if (pick < 0.6) parts.push(frame.subarray(0, Math.floor(r() * frame.length)));
      else if (pick < 0.8) {
        const broken = Buffer.from(frame);
        broken[Math.floor(r() * broken.length)] = special[Math.floor(r() * special.length)]!;
        parts.push(broken);
      } else parts.push(Buffer.from(Array.from({ length: Math.floor(r() * 20) }, () => Math.floor(r() * 256))));
    }
    if (r() < 0.1) parts.push(bytes('7'.repeat(MAX_LINE_BYTES + Math.floor(r() * 10))));
    return Buffer.concat(parts);
  }

  it.each(SERIAL_FRAMINGS)('%s', (framing) => {
    const r = random(0x5eed + framing.length);
    for (let round = 0; round < 150; round++) {
      const stream = randomStream(framing, r);
      const whole = createParser(framing);
      const frames = [...whole.push(stream), ...whole.reset()];
      for (const frame of frames)
        if (!frame.ok) expect(frame.detail.length, `${framing} round ${round}`).toBeGreaterThan(0);

      const randomCut = createParser(framing);
      const chunks: Buffer[] = [];
      for (let at = 0; at < stream.length; ) {
        const size = 1 + Math.floor(r() * 9);
        chunks.push(stream.subarray(at, at + size));
        at += size;
      }
      expect([...feed(randomCut, chunks), ...randomCut.reset()], `${framing} round ${round}`).toEqual(frames);

      const byteWise = createParser(framing);
      expect([...feed(byteWise, byteByByte(stream)), ...byteWise.reset()], `${framing} round ${round}`).toEqual(frames);

      const next = good[framing](r);
      const expected = feed(createParser(framing), [next]);
      expect(whole.push(next), `${framing} round ${round}`).toEqual(expected);
      expect(expected).toHaveLength(1);
      expect(expected[0]?.ok).toBe(true);
    }
  });
});
